import Foundation

/// userInfo as stored: a binary property list of a `[String: Any]` dictionary.
///
/// Property-list types round-trip: `String`, `Int` and other numbers, `Bool`, `Date`, `Data`,
/// and arrays and dictionaries (with `String` keys) of them. Anything else cannot be stored; the
/// cache then refuses the whole response rather than store it without its userInfo.
enum UserInfoCodec {
    static func encode(_ userInfo: [AnyHashable: Any]?) -> Result<[UInt8], StoreRefusal> {
        guard let userInfo, !userInfo.isEmpty else { return .success([]) }
        var dictionary: [String: Any] = [:]
        for (key, value) in userInfo {
            guard let name = key.base as? String else { return .failure(.userInfoNotPropertyList) }
            dictionary[name] = value
        }
        guard PropertyListSerialization.propertyList(dictionary, isValidFor: .binary) else {
            return .failure(.userInfoNotPropertyList)
        }
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)
            return .success(Array(data))
        } catch {
            return .failure(.userInfoNotPropertyList)
        }
    }

    /// The stored dictionary, or `nil` when there is none or it does not decode.
    static func decode(_ bytes: [UInt8]) -> [AnyHashable: Any]? {
        guard !bytes.isEmpty,
            let plist = try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil),
            let dictionary = plist as? [String: Any]
        else { return nil }
        return Dictionary(uniqueKeysWithValues: dictionary.map { (AnyHashable($0.key), $0.value) })
    }
}
