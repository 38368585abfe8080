import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// An epoll instance: one thread waits in it until one of many descriptors has input, without a thread per
/// descriptor. Each watch is one-shot: a descriptor is reported once, then not again until ``rearm(_:token:)``,
/// so the one who drains it decides when it may be reported again.
///
/// Watches may be added and removed from any thread while another waits: epoll takes them into account at once.
public struct ReadinessWaiter: Sendable {
    /// The epoll descriptor, close-on-exec.
    public let descriptor: FileDescriptor

    /// Makes an epoll instance.
    /// - Throws: The errno of `epoll_create1` (`EMFILE`, `ENOMEM`).
    public static func make() throws(Errno) -> ReadinessWaiter {
        ReadinessWaiter(descriptor: FileDescriptor(rawValue: try valueOrErrno { CLinuxShims_epoll_create() }))
    }

    /// Watches `file` for input, reported as `token`.
    public func watch(_ file: FileDescriptor, token: UInt64) throws(Errno) {
        _ = try valueOrErrno { CLinuxShims_epoll_watch(descriptor.rawValue, file.rawValue, token, 0) }
    }

    /// Lets `file`, reported once since it was watched or re-armed, be reported again.
    public func rearm(_ file: FileDescriptor, token: UInt64) throws(Errno) {
        _ = try valueOrErrno { CLinuxShims_epoll_watch(descriptor.rawValue, file.rawValue, token, 1) }
    }

    /// Stops watching `file`; call before closing it.
    public func unwatch(_ file: FileDescriptor) throws(Errno) {
        _ = try valueOrErrno { CLinuxShims_epoll_unwatch(descriptor.rawValue, file.rawValue) }
    }

    /// Blocks until at least one watched descriptor has input; returns the tokens of those that have.
    public func wait() throws(Errno) -> [UInt64] {
        var tokens = [UInt64](repeating: 0, count: 16)
        let count = try valueOrErrno {
            tokens.withUnsafeMutableBufferPointer {
                CLinuxShims_epoll_wait(descriptor.rawValue, $0.baseAddress, Int32($0.count))
            }
        }
        return Array(tokens[..<Int(count)])
    }
}
