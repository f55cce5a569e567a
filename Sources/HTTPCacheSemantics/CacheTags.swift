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
    @inlinable
    public static func tags<Fields: Sequence>(in fields: Fields, names: [String]) -> [String]
    where Fields.Element == (name: String, value: String) {
        // Inlinable so that each caller gets it specialised for its sequence: unspecialised, every
        // field came through the generic iterator's witness table, most of what a store's tags cost.
        guard !names.isEmpty else { return [] }
        var seen = Set<Substring>()
        var tags: [String] = []
        var total = 0
        // Every store asks, and most responses have no tag field: names are compared in place,
        // without the lowercased copies a set lookup would make of each field name.
        for field in fields where names.contains(where: { sameFieldName($0, field.name) }) {
            for token in field.value.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }) {
                let bytes = token.utf8.count
                guard bytes <= maximumTagBytes, !token.utf8.contains(0), seen.insert(token).inserted else { continue }
                guard total + bytes + 1 <= maximumTotalBytes else { return tags }
                total += bytes + 1
                tags.append(String(token))
            }
        }
        return tags
    }

    /// Field names are tokens (ASCII, RFC 9110 §5.1), compared without regard to case.
    @usableFromInline
    static func sameFieldName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    @usableFromInline
    static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}
