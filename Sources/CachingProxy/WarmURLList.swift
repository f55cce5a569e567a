import Foundation

/// The URLs of a plain list for `urlcache warm --urls FILE`: one per line; blank lines and lines
/// starting with `#` are skipped, surrounding whitespace is trimmed. A relative target (`/path`)
/// is resolved against `base`, the origin the proxy forwards to, so the entries are keyed as the
/// proxy keys them.
package enum WarmURLList {
    /// The list's URLs, in order, duplicates kept (the warmer drops them).
    package static func urls(in text: String, base: String? = nil) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
            return resolve(trimmed, against: base)
        }
    }

    /// `target` as an absolute URL: itself when it has a scheme, `base` + target for an
    /// origin-form target (`/a?b`), `nil` otherwise (nothing to fetch).
    package static func resolve(_ target: String, against base: String?) -> String? {
        let lowered = target.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return target }
        guard target.hasPrefix("/"), let base else { return nil }
        let trimmedBase = base.hasSuffix("/") ? String(base.dropLast()) : base
        return trimmedBase + target
    }
}
