/// The tags a response names for purging: the values of `Surrogate-Key` (Fastly), `Cache-Tag`
/// (Cloudflare) and `xkey` (Varnish), or of the fields a cache is configured with.
///
/// Each of those fields is a list of tokens separated by spaces (`Surrogate-Key`, `xkey`) or
/// commas (`Cache-Tag`); both separators are accepted in all of them, since no convention allows
/// either inside a tag. A tag longer than ``maximumTagBytes`` is dropped, duplicates are kept once,
/// and the list stops before ``maximumTotalBytes`` (what the store accepts with the entry).
public enum CacheTags {
    /// `Surrogate-Key`, `Cache-Tag` and `xkey`.
    public static let defaultFieldNames = ["Surrogate-Key", "Cache-Tag", "xkey"]
    /// The longest tag kept, in UTF-8 bytes.
    public static let maximumTagBytes = 1024
    /// The most tag bytes kept for one response (each tag counts one byte more).
    public static let maximumTotalBytes = 16384

    /// The tags in `fields` (name–value pairs as received) under any of `names`
    /// (case-insensitive), in order of appearance.
    public static func tags<Fields: Sequence>(in fields: Fields, names: [String]) -> [String]
    where Fields.Element == (name: String, value: String) {
        guard !names.isEmpty else { return [] }
        let wanted = Set(names.map { $0.lowercased() })
        var seen = Set<Substring>()
        var tags: [String] = []
        var total = 0
        for field in fields where wanted.contains(field.name.lowercased()) {
            for token in field.value.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }) {
                let bytes = token.utf8.count
                guard bytes <= maximumTagBytes, !token.contains("\0"), seen.insert(token).inserted else { continue }
                guard total + bytes + 1 <= maximumTotalBytes else { return tags }
                total += bytes + 1
                tags.append(String(token))
            }
        }
        return tags
    }
}
