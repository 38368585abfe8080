import Foundation
import LMDBKit
import Synchronization

extension ChunkCache {
    /// Calls `handler` with the domain's name each time an import or reimport this process runs finishes:
    /// `importDidFinish`, once per import epoch, also when a reimport joined the import under way
    /// (<doc:FileProviderRules#G4>).
    public func observeImportsFinished(_ handler: @escaping @Sendable (_ domain: String) -> Void) {
        engine.importEvents.observe(handler)
    }

    /// Calls `handler` with each entry an import or reimport this process runs could not take in, as it
    /// happens (the import goes on without it; ``ImportResult/failures`` lists them at the end), and with
    /// the error that stopped an import as a whole (``ImportFailure/path`` nil; it resumes on the next open).
    public func observeImportFailures(_ handler: @escaping @Sendable (ImportFailure) -> Void) {
        engine.importEvents.observeFailures(handler)
    }

    /// Takes in `url` again as the contents of `item` (the root by default), as `reimportItems(below:)`:
    /// files matched by parent, name, size and modification time are not read (<doc:FileProviderRules#G1>), changed
    /// ones get a new version, new ones are created, and items below `item` the directory no longer has are deleted.
    /// The directory stays in place. Asked while an import of the domain is under way, it joins it, and one
    /// `importDidFinish` covers both (<doc:FileProviderRules#G4>); run by the process running that import.
    /// - Throws: `noSuchItem` for an unknown domain or item; `invalidArgument` for an item that is not a
    ///   folder, or a path that is not a directory.
    public func reimportItems(below item: String = Item.rootContainer, in domain: String, from url: URL) async throws
        -> ImportResult
    {
        try Records.validate(domain: domain, item: item)
        let engine = self.engine
        let store = engine.store
        let path = url.standardizedFileURL.path
        return try await runBlocking(doing: "reimporting \(path) into domain \"\(domain)\"", store: store.path) {
            cancellation in
            let (root, identity) = try ImportRunner.checkTree(path)
            try StoreFootprint(store).refuse(root: root, identity: identity)
            let writer = try store.writerToken()
            let (job, joined) = try store.writer.writeAndWait { txn in
                if item != Item.rootContainer {
                    let folder = try Records.item(item, domain: domain, in: txn, store.dbs)
                    guard folder.kind == .folder else {
                        throw CacheError(
                            .invalidArgument,
                            "\"\(item)\" in domain \"\(domain)\" is a \(folder.kind); reimport below a folder, or the root"
                        )
                    }
                }
                return try txn.beginReimport(domain, from: root, below: item, writer: writer, store.dbs)
            }
            guard !joined || job.writer == writer, engine.runningImports.claim(domain) else {
                // Another runner (of this process or another) has the import: it takes this tree in too
                // before it finishes.
                return try Self.importResult(domain, ImportTally(), (false, nil), copy: true, engine: engine)
            }
            defer { engine.runningImports.release(domain) }
            var runner = ImportRunner(
                engine: engine, domain: domain, writer: writer, cancellation: cancellation, hooks: ImportHooks())
            let outcome = try runner.run()
            return try Self.importResult(domain, runner.tally, outcome, copy: true, engine: engine)
        }
    }

    /// Resumes the imports and reimports whose process died (<doc:Contract#8-Import>): each goes on from what it had
    /// published and finishes once. Opening a store does this in the background; `import --resume` waits
    /// for it. Imports another live process runs are left to it.
    public func resumeImports() async throws -> [ImportResult] {
        let engine = self.engine
        let store = engine.store
        return try await runBlocking(doing: "resuming interrupted imports", store: store.path) { cancellation in
            let writer = try store.writerToken()
            var results: [ImportResult] = []
            for (domain, job) in try store.environment.read({ txn in try txn.importJobs(store.dbs) }) {
                guard engine.runningImports.claim(domain) else { continue }  // this process runs it
                defer { engine.runningImports.release(domain) }
                if job.writer != writer {
                    // alive
                    guard let lease = try AbandonedLease.claim(job.writer, in: store.writersPath) else { continue }
                    let claimed = try store.writer.writeAndWait { txn -> Bool in
                        guard var current = try txn.importJob(domain, store.dbs), current.writer == job.writer else {
                            return false
                        }
                        current.writer = writer
                        try txn.saveImportJob(current, of: domain, store.dbs)
                        return true
                    }
                    lease.remove()
                    guard claimed else { continue }
                }
                var runner = ImportRunner(
                    engine: engine, domain: domain, writer: writer, cancellation: cancellation, hooks: ImportHooks())
                let outcome = try runner.run()
                results.append(try Self.importResult(domain, runner.tally, outcome, copy: job.copy, engine: engine))
            }
            return results
        }
    }
}
