import Foundation

/// Decodes a `gzip` or `deflate` (zlib) response body the way a client would, with Python's
/// standard library in a real process (the tests' own build has no decoder to trust): what a
/// compressed-passthrough answer must survive.
public func decodedContent(_ data: Data, coding: String) throws -> Data {
    let directory = TemporaryDirectory(prefix: "suc-decode")
    let input = directory.root + "/in", output = directory.root + "/out"
    try data.write(to: URL(fileURLWithPath: input))
    let call = coding == "gzip" ? "gzip.decompress" : "zlib.decompress"
    let script = "import gzip,zlib,sys; open(sys.argv[2],'wb').write(\(call)(open(sys.argv[1],'rb').read()))"
    let outcome = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, input, output])
        .finish()
    guard outcome.status == 0 else { throw DecodingFailed(message: outcome.err) }
    return try Data(contentsOf: URL(fileURLWithPath: output))
}

/// The decoder refused the body (its message).
public struct DecodingFailed: Error {
    public var message: String
}
