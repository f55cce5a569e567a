/// The one error type of the cache: what went wrong, in words, with the underlying cause.
///
/// ```swift
/// do {
///     try store.store(record, body: body)
/// } catch CacheError.Code.diskFull {
///     logger.warning("cache disk is full; serving without caching")
/// }
/// ```
///
/// Codes are matchable in `catch` clauses (`catch CacheError.Code.corrupt`) through `~=`.
public struct CacheError: Error, Sendable, CustomStringConvertible {
    /// A stable, extensible kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, as `urlcache` prints it and logs match on.
        public let name: String
        /// A code by name (the core's codes come from its own table).
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// No such entry.
        public static let notFound = Code("notFound")
        /// A malformed argument or input (a programmer error or untrusted input).
        public static let invalidInput = Code("invalidInput")
        /// Stored data failed an integrity check; it was treated as a miss.
        public static let corrupt = Code("corrupt")
        /// The entry, or one of its parts, exceeds a configured limit.
        public static let tooLarge = Code("tooLarge")
        /// The disk or quota is full.
        public static let diskFull = Code("diskFull")
        /// The index reached its configured maximum size.
        public static let indexFull = Code("indexFull")
        /// The operating system refused access.
        public static let permissionDenied = Code("permissionDenied")
        /// Any other input/output failure.
        public static let io = Code("io")
        /// Memory allocation failed.
        public static let outOfMemory = Code("outOfMemory")
        /// The directory was written by a format this build does not read.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// The directory is a symlink, world-writable, or of a foreign group.
        public static let unsafeDirectory = Code("unsafeDirectory")
        /// The directory holds something that is not a cache.
        public static let notACache = Code("notACache")
        /// The directory does not exist.
        public static let directoryNotFound = Code("directoryNotFound")
        /// The handle was used in a child process after `fork()`.
        public static let usedAfterFork = Code("usedAfterFork")
        /// Any other failure of the index (LMDB).
        public static let index = Code("index")
        /// No free reader slot in the index, even after clearing stale ones.
        public static let readersFull = Code("readersFull")
        /// Another compaction holds the directory's maintenance lock.
        public static let busy = Code("busy")
        /// The entry alone is larger than the store's capacity (smaller ones evict to fit).
        public static let overCapacity = Code("overCapacity")
    }

    /// What the operating system or a library reported underneath.
    public struct Cause: Sendable, Hashable {
        /// The failing operation, e.g. `"openat(body)"` or `"mdb_txn_commit"`.
        public var operation: String
        /// `errno` of the failing system call, or 0.
        public var errno: Int32
        /// The LMDB or zlib return code, or 0.
        public var libraryCode: Int32
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in words, with the path or limit involved.
    public var message: String
    /// The system or library call that failed, when there was one.
    public var cause: Cause?
    /// Where in Swift the error surfaced.
    public var location: String

    /// An error of `code`; `file` and `line` say where it was raised.
    public init(_ code: Code, _ message: String, cause: Cause? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.cause = cause
        self.location = "\(file):\(line)"
    }

    public var description: String { "\(code): \(message)" }

    /// The message with its cause and location, for logs.
    public func detailedDescription() -> String {
        var text = "\(code): \(message)"
        if let cause {
            text += " [op: \(cause.operation), errno: \(cause.errno), rc: \(cause.libraryCode)]"
        }
        return text + " at \(location)"
    }

}

extension CacheError.Code {
    /// Lets `catch CacheError.Code.diskFull` match.
    public static func ~= (code: CacheError.Code, error: any Error) -> Bool {
        (error as? CacheError)?.code == code
    }
}
