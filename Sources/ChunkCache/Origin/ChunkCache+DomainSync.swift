import Foundation
import LMDBKit
import OriginKit
import Synchronization

extension ChunkCache {
    /// Lists the domain's origin and applies what it finds as changes
    /// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>, `domain sync`): new files (with the
    /// folders of their paths), new versions of known files, files and folders the origin no longer has. Local metadata
    /// (favorites, tags, the trash, moves and renames) is kept.
    ///
    /// The whole listing is read first and applied in one transaction, so a sync that fails part-way applies
    /// nothing and moves no anchor (<doc:FileProviderRules#F12>); run it again to retry. Memory grows with the number
    /// of objects listed (about 200 bytes each), never with their sizes.
    ///
    /// - Throws: `invalidArgument` for a domain without an origin or a listing the origin cannot give;
    ///   the origin's errors as a fetch maps them (`serverUnreachable`, `notAuthenticated`, `noPermission`,
    ///   `transient`).
    public func syncDomain(_ name: String) async throws -> SyncResult {
        try Records.validate(domain: name, item: nil)
        let store = self.store
        let record = try await runBlocking(doing: "reading domain \"\(name)\"", store: store.path) {
            try store.environment.read { txn in try Records.domain(name, in: txn, store.dbs) }
        }
        guard let session = try engine.origins.session(for: name, record) else {
            throw CacheError(
                .invalidArgument,
                "domain \"\(name)\" has no origin to sync from; give it one with `chunkcache domain set \(name) --origin URL`"
            )
        }
        let listing = ListingCollector()
        do {
            try await session.origin.list { page in listing.add(page) }
        } catch let failure as OriginFailure {
            throw CacheError.originListing(failure, domain: name)
        }
        let entries = listing.entries
        let layout = store.layout
        do {
            return try await store.writer.write { txn in
                try txn.applyListing(entries, domain: name, layout: layout, store.dbs)
            }
        } catch {
            throw CacheError.wrap(
                error, store: store.path, doing: "applying the origin's listing to domain \"\(name)\"")
        }
    }
}
