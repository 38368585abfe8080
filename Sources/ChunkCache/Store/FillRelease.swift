import FileIO
import LMDBKit

/// The fill bytes one write transaction forgot, freed by ``WriteTransaction/releaseUnnamedFills(_:_:)`` in a
/// transaction of their own once it has committed, however many it forgot.
final class FillRelease: AfterCommit {
    var unnamed = UnnamedFills()
    private let dbs: Databases

    init(_ dbs: Databases) { self.dbs = dbs }

    func run(_ environment: Environment) {
        guard !unnamed.isEmpty else { return }
        // Failing here leaves bytes no record names, as a kill here would; they go with their file. Reported to
        // standard error: an after-commit step is given the environment, not the store and its diagnostics.
        Diagnostics.standardError.attempt("free the disk of forgotten downloaded chunks") {
            try environment.write { txn in try txn.releaseUnnamedFills(unnamed, dbs) }
        }
    }
}
