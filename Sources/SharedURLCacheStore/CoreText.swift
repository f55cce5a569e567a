/// The text the core writes into a fixed-size `char` array (`suc_error.message`, a report's
/// message): up to its first NUL, as UTF-8.
func coreText<Characters>(_ characters: Characters) -> String {
    var characters = characters
    return withUnsafeBytes(of: &characters) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
}
