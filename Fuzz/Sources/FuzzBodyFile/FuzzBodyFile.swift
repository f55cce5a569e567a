import FuzzChecks

/// libFuzzer entry point (RELIABILITY T12): built with -sanitize=fuzzer by scripts/fuzz.sh.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = count == 0 ? [] : Array(UnsafeRawBufferPointer(start: start, count: count))
    FuzzChecks.run("body-file", data)
    return 0
}
