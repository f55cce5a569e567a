/// What kind of record a store entry is, in `RecordDescriptor.appFlags` (opaque to the store).
package enum RecordKind: UInt32 {
    /// A response: head + body (+ userInfo).
    case response = 1
    /// A ``VarySpec`` at the empty variant; the responses live at their variants.
    case varySpec = 2

    /// The kind as `urlcache show` names it.
    package var displayName: String {
        switch self {
        case .response: "response"
        case .varySpec: "Vary spec"
        }
    }
}
