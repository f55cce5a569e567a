import FuzzChecks
import FuzzDriver

/// libFuzzer entry point (docs/Reliability.md T12): built with -sanitize=fuzzer by scripts/fuzz.sh.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = count == 0 ? [] : Array(UnsafeRawBufferPointer(start: start, count: count))
    FuzzChecks.run("body-file", data)
    return 0
}

/// The process entry point: SwiftPM aliases `main` to `FuzzBodyFile_main`, which -parse-as-library
/// never emits; this one hands the process to libFuzzer's driver with the check above.
@_cdecl("FuzzBodyFile_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc, argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(UnsafeRawPointer(data), size) }
}
