/// How the workers of a `urlcache bench` run operate, the same for every implementation, body
/// size and entry count: the driver holds one and hands it to each ``BenchWorkload``.
package struct BenchMix: Sendable, Codable {
    /// How long each worker runs (unless `operations` is set).
    package var seconds: Double
    package var lookupPercent: Int
    package var zipfExponent: Double
    /// The run's seed; each worker and thread derives its own from it.
    package var seed: UInt64
    /// Threads in a worker process, sharing one open cache (only implementations that allow it;
    /// the others run one). Concurrent stores share commits: this is how group commit shows.
    package var threads: Int
    /// Stop after this many operations (over all threads of a worker) instead of after `seconds`.
    package var operations: Int?
    /// Durable mode (see ``BenchImplementationKind/open(directory:durable:populating:)``).
    package var durable: Bool

    package init(
        seconds: Double, lookupPercent: Int, zipfExponent: Double, seed: UInt64, threads: Int = 1,
        operations: Int? = nil, durable: Bool = false
    ) {
        self.seconds = seconds
        self.lookupPercent = lookupPercent
        self.zipfExponent = zipfExponent
        self.seed = seed
        self.threads = threads
        self.operations = operations
        self.durable = durable
    }
}
