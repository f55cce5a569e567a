import Foundation
import HTTPCacheSemantics
import HTTPTypes

/// A fixed instant standing in for "now" at store time: 2023-11-14T22:13:20Z.
let t0 = Date(timeIntervalSince1970: 1_700_000_000)

/// `t0 + seconds`.
func at(_ seconds: Int) -> Date { t0.addingTimeInterval(TimeInterval(seconds)) }

/// IMF-fixdate of `t0 + seconds`.
func httpDate(_ seconds: Int) -> String { HTTPDate(at(seconds)).imfFixdate }

/// Builds fields from name/value pairs (names must be valid).
func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var result = HTTPFields()
    for (name, value) in pairs { result.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return result
}

func request(_ method: HTTPRequest.Method = .get, _ headers: [(String, String)] = []) -> HTTPRequest {
    HTTPRequest(
        method: method, scheme: "https", authority: "example.com", path: "/resource", headerFields: fields(headers))
}

func response(_ status: Int = 200, _ headers: [(String, String)] = []) -> HTTPResponse {
    HTTPResponse(status: HTTPResponse.Status(code: status), headerFields: fields(headers))
}

/// A stored response received at t0 (request sent at t0 unless told).
func stored(
    _ status: Int = 200,
    _ headers: [(String, String)],
    method: HTTPRequest.Method = .get,
    requestHeaders: [(String, String)] = [],
    requestTime: Date = t0,
    responseTime: Date = t0
) -> StoredResponse {
    StoredResponse(
        request: request(method, requestHeaders),
        response: response(status, headers),
        requestTime: requestTime,
        responseTime: responseTime
    )
}

let sharedConfiguration = CachePolicyConfiguration()
let privateConfiguration = CachePolicyConfiguration(mode: .private)
