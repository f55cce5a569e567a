/// Bounds on a response head before it may be stored (docs/Reliability.md §3.5).
public struct HeaderLimits: Sendable, Hashable {
    /// Maximum number of field lines (default 256).
    public var maximumFieldCount: Int
    /// Maximum bytes of all field lines, counted as `name: value\r\n` (default 64 KiB).
    public var maximumTotalBytes: Int
    /// Maximum bytes of one field line, counted as `name: value` (default 8 KiB).
    public var maximumFieldLineBytes: Int
    /// Maximum number of names in `Vary` (default 16).
    public var maximumVaryNames: Int

    /// Creates limits.
    ///
    /// - Parameters:
    ///   - maximumFieldCount: Maximum number of field lines.
    ///   - maximumTotalBytes: Maximum bytes of the whole header block.
    ///   - maximumFieldLineBytes: Maximum bytes of one field line.
    ///   - maximumVaryNames: Maximum number of names in `Vary`.
    public init(
        maximumFieldCount: Int = 256,
        maximumTotalBytes: Int = 64 * 1024,
        maximumFieldLineBytes: Int = 8 * 1024,
        maximumVaryNames: Int = 16
    ) {
        self.maximumFieldCount = maximumFieldCount
        self.maximumTotalBytes = maximumTotalBytes
        self.maximumFieldLineBytes = maximumFieldLineBytes
        self.maximumVaryNames = maximumVaryNames
    }
}
