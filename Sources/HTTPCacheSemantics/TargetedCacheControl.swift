import HTTPTypes
import RawStructuredFieldValues

/// Targeted cache-control fields (RFC 9213), such as `CDN-Cache-Control`: directives an origin
/// addresses to one class of cache, in place of `Cache-Control`.
///
/// RFC 9213 §2.1: a cache with a target list uses the first listed field that has a valid,
/// non-empty value, and then ignores `Cache-Control` and `Expires`; with none, those apply as
/// usual. §2.2: the fields are Structured Field Dictionaries (RFC 9651); a field that does not
/// parse is ignored as a whole. Here a known directive with a value of the wrong type (e.g.
/// `max-age="60"`) makes the field invalid too, so that the cache falls back to `Cache-Control`
/// rather than guess. Unknown directives are ignored; qualified `no-cache` / `private` (inner
/// lists of field names) count as unqualified, as they do in `Cache-Control` here.
public enum TargetedCacheControl {
    /// The directive names whose value is a number of seconds.
    private static let secondsDirectives: Set<String> = [
        "max-age", "s-maxage", "stale-while-revalidate", "stale-if-error",
    ]
    /// The directive names whose value is a boolean (`no-cache` and `private` may also list names).
    private static let flagDirectives: Set<String> = [
        "no-cache", "private", "no-store", "must-revalidate", "proxy-revalidate", "public", "immutable",
        "must-understand",
        "no-transform",
    ]

    /// The directives of the first field in `targets` with a valid, non-empty value, or nil when
    /// none has one (then `Cache-Control` and `Expires` apply).
    ///
    /// - Parameters:
    ///   - fields: The response header fields.
    ///   - targets: The cache's target list, in order of precedence.
    public static func directives(in fields: HTTPFields, targets: [HTTPField.Name]) -> CacheControl? {
        for name in targets {
            let lines = fields[values: name]
            if lines.isEmpty { continue }
            if let text = cacheControlText(dictionary: lines.joined(separator: ", ")) { return CacheControl(text) }
        }
        return nil
    }

    /// The dictionary as `Cache-Control` text, or nil when it is empty or invalid.
    static func cacheControlText(dictionary value: String) -> String? {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue(), dictionary.count > 0 else { return nil }
        var directives: [String] = []
        for (name, member) in dictionary {
            if secondsDirectives.contains(name) {
                guard case .item(let item) = member, case .integer(let seconds) = item.rfc9651BareItem, seconds >= 0
                else {
                    return nil
                }
                directives.append("\(name)=\(seconds)")
            } else if flagDirectives.contains(name) {
                switch member {
                case .item(let item):
                    guard case .bool(let on) = item.rfc9651BareItem else { return nil }
                    if on { directives.append(name) }
                case .innerList where name == "no-cache" || name == "private":
                    directives.append(name)
                case .innerList:
                    return nil
                }
            }
        }
        // A field of unknown directives only is valid and non-empty: nothing constrains caching,
        // and Cache-Control is still ignored (RFC 9213 §2.1).
        return directives.joined(separator: ", ")
    }
}

extension CacheControl {
    /// The response directives a cache with `configuration` follows: a targeted field's
    /// (RFC 9213, ``CachePolicyConfiguration/targetedFields``) when one applies, else
    /// `Cache-Control`'s.
    ///
    /// - Parameters:
    ///   - responseFields: The response header fields.
    ///   - configuration: The cache's policy (its target list).
    public init(responseFields: HTTPFields, configuration: CachePolicyConfiguration) {
        self =
            TargetedCacheControl.directives(in: responseFields, targets: configuration.targetedFields)
            ?? CacheControl(responseFields: responseFields)
    }
}
