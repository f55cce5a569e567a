import NIOHTTP1

/// Where ``ProxyHandler`` puts the fields it adds to every answer after the answer's own (`Date`
/// when there is none, the cache status fields, `Connection`): one rule for which fields and in
/// what order, written into either of the two forms a head takes.
protocol AnswerFields {
    /// Appends a field.
    mutating func add(_ name: String, _ value: String)
    /// Sets a field the head may carry already (its fields of that name go), else appends it.
    mutating func replaceOrAdd(_ name: String, _ value: String)
}

extension HTTPHeaders: AnswerFields {
    mutating func add(_ name: String, _ value: String) { add(name: name, value: value) }

    mutating func replaceOrAdd(_ name: String, _ value: String) { replaceOrAdd(name: name, value: value) }
}

/// The answer fields of a memory hit answered from a prepared head, as the bytes that follow the
/// prepared fields on the wire: an `HTTPHeaders` for two or three fields, its replace-or-add
/// scans, and the encoder measuring and copying it again cost such a hit about 1,500
/// instructions more. Replacing is appending here, because a prepared head holds none of the
/// replaced fields (``PreparedStoredHead`` leaves out the cache status field, and a stored head
/// with `Connection` is not prepared).
struct AnswerFieldLines: AnswerFields {
    private(set) var bytes: [UInt8] = []

    /// Room for the usual lines at once (a date, both cache status fields, a connection option
    /// take about 120 bytes), instead of growing the array line by line.
    init() { bytes.reserveCapacity(128) }

    mutating func add(_ name: String, _ value: String) { bytes.appendFieldLine(name, value) }

    mutating func replaceOrAdd(_ name: String, _ value: String) { bytes.appendFieldLine(name, value) }
}
