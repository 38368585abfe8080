import FileIO

/// Where the engine reports failures it cannot throw: a rollback or cleanup that fails while another error is
/// already on its way to the caller, or after the operation succeeded. Never silent, never fatal.
///
/// Reports go to standard error, one line each (``standardError``), unless a test gave its store another
/// sink when it opened it (``EngineProbes/diagnostics``); the store's is ``Store/diagnostics``.
struct Diagnostics: Sendable {
    /// Receives each report, one line without its newline.
    let sink: @Sendable (String) -> Void

    /// Reports to standard error: the product's, and that of code no store owns.
    static let standardError = Diagnostics { line in
        _ = try? Array((line + "\n").utf8).withUnsafeBytes { try FileDescriptor(rawValue: 2).writeAll($0) }
    }

    /// The diagnostics of a store opened with `probes`: their sink when they have one, else standard error.
    init(probes sink: (@Sendable (String) -> Void)?) {
        self = sink.map(Diagnostics.init(sink:)) ?? .standardError
    }

    init(sink: @escaping @Sendable (String) -> Void) { self.sink = sink }

    /// Runs `cleanup`; when it throws, reports that it could not `what` (a phrase naming the thing, as "roll
    /// back the pending manifest of /data/movie.mp4") with the error, and carries on.
    func attempt(_ what: @autoclosure () -> String, _ cleanup: () throws -> Void) {
        do { try cleanup() } catch {
            sink("chunkcache: could not \(what()): \(error)")
        }
    }

    /// Reports that `what` (a phrase such as "record when items were last used") failed with `error`.
    func report(_ what: String, _ error: any Error) {
        attempt(what) { throw error }
    }
}
