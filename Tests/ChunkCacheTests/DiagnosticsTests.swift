import Synchronization
import Testing

@testable import ChunkCache

/// A rollback that fails while another error is on its way leaves a trace instead of vanishing in a `try?`.
@Suite struct DiagnosticsTests {
    struct RollbackFailed: Error, CustomStringConvertible {
        var description: String { "the map is full" }
    }

    @Test("a failed cleanup is reported with what it was doing and its error; a clean one reports nothing")
    func failedCleanupIsReported() {
        let reports = Mutex<[String]>([])
        let diagnostics = Diagnostics(sink: { line in reports.withLock { $0.append(line) } })
        diagnostics.attempt("roll back the pending manifest of /data/a") {}
        diagnostics.attempt("roll back the pending manifest of /data/b") { throw RollbackFailed() }
        #expect(
            reports.withLock { $0 } == [
                "chunkcache: could not roll back the pending manifest of /data/b: the map is full"
            ])
    }
}
