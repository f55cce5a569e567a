import Dispatch
import FuzzDriver
import FuzzProxyChecks

/// libFuzzer entry point (docs/Reliability.md T12): the input is what a client sent on one
/// connection to the proxy; the check is async (the proxy answers in tasks), so this thread waits
/// for it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = count == 0 ? [] : Array(UnsafeRawBufferPointer(start: start, count: count))
    let done = DispatchSemaphore(value: 0)
    Task {
        await ProxyRequestFuzzCheck.check(data)
        done.signal()
    }
    done.wait()
    return 0
}

/// The process entry point: SwiftPM aliases `main` to `FuzzProxyRequest_main`, which
/// -parse-as-library never emits; this one hands the process to libFuzzer's driver.
@_cdecl("FuzzProxyRequest_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc, argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(UnsafeRawPointer(data), size) }
}
