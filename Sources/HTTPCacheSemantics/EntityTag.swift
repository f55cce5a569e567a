/// An entity tag (RFC 9110 §8.8.3), used to validate stored responses.
public struct EntityTag: Sendable, Hashable {
    /// True for a weak tag (`W/"…"`).
    public var isWeak: Bool
    /// The opaque tag without quotes or the weak prefix.
    public var opaqueTag: String

    /// Creates a tag.
    ///
    /// - Parameters:
    ///   - opaqueTag: The tag without quotes.
    ///   - isWeak: Whether the tag is weak.
    public init(opaqueTag: String, isWeak: Bool = false) {
        self.opaqueTag = opaqueTag
        self.isWeak = isWeak
    }

    /// Parses an `ETag` field value; nil when it is not `"…"` or `W/"…"` (RFC 9110 §8.8.3).
    ///
    /// - Parameters:
    ///   - text: The field value.
    public init?(_ text: String) {
        var value = Substring(text.trimmingOWS())
        var weak = false
        if value.hasPrefix("W/") {
            weak = true
            value = value.dropFirst(2)
        }
        guard value.count >= 2, value.first == "\"", value.last == "\"" else { return nil }
        let opaque = value.dropFirst().dropLast()
        guard !opaque.contains("\"") else { return nil }
        self.init(opaqueTag: String(opaque), isWeak: weak)
    }

    /// The tag as sent in a field (`"x"` or `W/"x"`).
    public var fieldValue: String { (isWeak ? "W/" : "") + "\"" + opaqueTag + "\"" }

    /// Strong comparison (RFC 9110 §8.8.3.2): both strong and the opaque tags equal.
    ///
    /// - Parameters:
    ///   - other: The tag to compare with.
    public func strongMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaqueTag == other.opaqueTag
    }

    /// Weak comparison (RFC 9110 §8.8.3.2): the opaque tags equal, weakness ignored.
    ///
    /// - Parameters:
    ///   - other: The tag to compare with.
    public func weakMatches(_ other: EntityTag) -> Bool {
        opaqueTag == other.opaqueTag
    }
}
