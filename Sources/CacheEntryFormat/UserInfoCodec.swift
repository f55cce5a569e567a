import Foundation

/// userInfo as stored: a binary property list of a `[String: Any]` dictionary.
///
/// Property-list types round-trip: `String`, `Int` and other numbers, `Bool`, `Date`, `Data`,
/// and arrays and dictionaries (with `String` keys) of them. Anything else cannot be stored; the
/// cache then refuses the whole response rather than store it without its userInfo.
/// The bytes are opaque to the store (a record's `userInfo`).
package enum UserInfoCodec {
    /// The stored bytes (empty for no userInfo), or `nil` when it is not a property list with
    /// `String` keys.
    package static func encode(_ userInfo: [AnyHashable: Any]?) -> [UInt8]? {
        guard let userInfo, !userInfo.isEmpty else { return [] }
        var dictionary: [String: Any] = [:]
        for (key, value) in userInfo {
            guard let name = key.base as? String else { return nil }
            dictionary[name] = value
        }
        guard PropertyListSerialization.propertyList(dictionary, isValidFor: .binary) else {
            return nil
        }
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)
            return Array(data)
        } catch {
            return nil
        }
    }

    /// The stored dictionary, or `nil` when there is none or it does not decode.
    package static func decode(_ bytes: [UInt8]) -> [AnyHashable: Any]? {
        guard !bytes.isEmpty,
            let plist = try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil),
            let dictionary = plist as? [String: Any]
        else { return nil }
        return Dictionary(uniqueKeysWithValues: dictionary.map { (AnyHashable($0.key), $0.value) })
    }
}
