import Foundation

/// IPv4 sockets on 127.0.0.1 for the tests' origins and clients: the one place that fills in a
/// `sockaddr_in`.
public enum LoopbackSocket {
    /// A socket listening on 127.0.0.1 at an ephemeral port.
    /// - Throws: `POSIXError` when the socket cannot be made, bound or put to listen.
    public static func listening(backlog: Int32 = 64) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw lastError() }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, port: 0) == 0, listen(fd, backlog) == 0 else {
            let error = lastError()
            close(fd)
            throw error
        }
        return (fd, boundPort(of: fd))
    }

    /// A port that was free a moment ago (for a child process to bind: the test cannot learn an
    /// ephemeral port from the child before it is listening).
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        _ = bind(fd, port: 0)
        return boundPort(of: fd)
    }

    /// A socket connected to 127.0.0.1:`port`; each read waits at most `receiveTimeoutSeconds`.
    /// - Throws: `POSIXError` (ECONNREFUSED when nothing listens).
    public static func connected(to port: Int, receiveTimeoutSeconds: Int? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw lastError() }
        if let receiveTimeoutSeconds {
            var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = lastError()
            close(fd)
            throw error
        }
        return fd
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private static func bind(_ fd: Int32, port: Int) -> Int32 {
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    private static func boundPort(of fd: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func lastError() -> POSIXError { POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}
