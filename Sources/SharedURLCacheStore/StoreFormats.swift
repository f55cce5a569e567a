import CSharedURLCache

/// The on-disk formats this build reads and writes (docs/Formats.md).
///
/// The directory format is checked at open: another one is refused with
/// `.unsupportedVersion`. Index records and body files carry their own `major.minor`: a newer
/// minor is read (what it adds is skipped), another major is a miss that is never purged, so
/// two releases can share a directory during a rolling upgrade.
public enum StoreFormats {
    /// The directory format this build creates. It opens directories of ``oldestDirectory``
    /// up to this one and keeps each in its own format; another one is refused.
    public static let directory = Int(SUC_DIRECTORY_FORMAT)
    /// The oldest directory format this build opens.
    public static let oldestDirectory = Int(SUC_DIRECTORY_FORMAT_OLDEST)
    /// The index record format, `major.minor`: a newer minor is read, another major is a miss.
    public static let record = "\(SUC_RECORD_FORMAT_MAJOR).\(SUC_RECORD_FORMAT_MINOR)"
    /// The body file format, `major.minor`, under the same rule as ``record``.
    public static let body = "\(SUC_BODY_FORMAT_MAJOR).\(SUC_BODY_FORMAT_MINOR)"
    /// The release of this package, as `urlcache --version` prints it.
    public static let release = "0.10.0"

    /// One line for `--version` and `stats`.
    public static var summary: String {
        "directory format \(directory) (one recency order; opens directories of format \(oldestDirectory) written by any earlier release and keeps them in it), record format \(record), body format \(body)"
    }
}
