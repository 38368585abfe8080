import Synchronization
import Testing

@testable import ChunkCache

/// A rollback that fails while another error is on its way leaves a trace instead of vanishing in a `try?`.
@Suite(.serialized) struct DiagnosticsTests {
    struct RollbackFailed: Error, CustomStringConvertible {
        var description: String { "the map is full" }
    }

    @Test("a failed cleanup is reported with what it was doing and its error; a clean one reports nothing")
    func failedCleanupIsReported() {
        let reports = Mutex<[String]>([])
        let previous = Diagnostics.sink.withLock { sink in
            defer { sink = { line in reports.withLock { $0.append(line) } } }
            return sink
        }
        defer { Diagnostics.sink.withLock { $0 = previous } }
        Diagnostics.attempt("roll back the pending manifest of /data/a") {}
        Diagnostics.attempt("roll back the pending manifest of /data/b") { throw RollbackFailed() }
        #expect(
            reports.withLock { $0 } == [
                "chunkcache: could not roll back the pending manifest of /data/b: the map is full"
            ])
    }
}
