/// A report that also prints as aligned text for humans.
protocol TextReport: Encodable {
    /// Lines for a terminal, without a trailing newline.
    var text: String { get }
}
