import Foundation
import Testing

/// The test bundle caps a parallel run's width before Swift Testing starts
/// (Tests/ParallelTestWidth): without the cap every case started at once and timing tests
/// failed for want of a core.
@Suite struct ParallelTestWidthTests {
    @Test("the bundle's width for a parallel run is set, a positive number of cases")
    func widthIsSet() throws {
        let width = try #require(ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"])
        #expect((Int(width) ?? 0) > 0, "width \(width)")
    }
}
