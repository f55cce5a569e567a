import Foundation

/// Runs the tests of this bundle that `filter` selects again, in a process of their own, with
/// `variable` set to 1 in its environment (the test tells by it that it is that run): for a
/// figure of the whole process, such as peak resident memory, which the test cases running
/// beside it in a parallel `swift test` would blur.
public func runAlone(_ filter: String, settingVariable variable: String) throws -> ChildProcess.Outcome {
    try ChildProcess(
        program: "/usr/bin/env",
        ["\(variable)=1", CommandLine.arguments[0], "--testing-library", "swift-testing", "--filter", filter]
    ).finish()
}
