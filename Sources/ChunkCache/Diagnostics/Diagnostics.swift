import FileIO
import Synchronization

/// Where the engine reports failures it cannot throw: a rollback or cleanup that fails while another error is
/// already on its way to the caller, or after the operation succeeded. Never silent, never fatal.
///
/// Reports go to standard error, one line each, unless a test swaps the ``sink``.
enum Diagnostics {
    /// Receives each report. A test hook: the default writes to standard error.
    static let sink = Mutex<@Sendable (String) -> Void>({ line in
        _ = try? Array((line + "\n").utf8).withUnsafeBytes { try FileDescriptor(rawValue: 2).writeAll($0) }
    })

    /// Runs `cleanup`; when it throws, reports that it could not `what` (a phrase naming the thing, as "roll
    /// back the pending manifest of /data/movie.mp4") with the error, and carries on.
    static func attempt(_ what: @autoclosure () -> String, _ cleanup: () throws -> Void) {
        do { try cleanup() } catch {
            let report = sink.withLock { $0 }
            report("chunkcache: could not \(what()): \(error)")
        }
    }

    /// Reports that `what` (a phrase such as "record when items were last used") failed with `error`.
    static func report(_ what: String, _ error: any Error) {
        attempt(what) { throw error }
    }
}
