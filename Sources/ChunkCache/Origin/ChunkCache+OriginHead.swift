import LMDBKit
import OriginKit

extension ChunkCache {
    /// Records an item of an origin domain that the store lacks from a `HEAD` of it: the item and an
    /// all-absent version, nothing downloaded. Does nothing for a domain without an origin or an item the
    /// store holds.
    func discoverByHead(_ item: ItemIdentifier) async throws {
        let store = self.store
        let missing = try store.environment.read { txn in
            let domain = try Records.domain(item.domain, in: txn, store.dbs)
            return try domain.origin != nil
                && !txn.contains(store.dbs.items, key: Keys.item(domain: item.domain, id: item.rawValue))
        }
        guard missing else { return }
        let session = try originSession(of: item.domain)
        do {
            let object = try await session.requests.withPermit {
                try await session.origin.head(item.rawValue, version: nil)
            }
            _ = try await store.writer.write { txn in
                try txn.recordOriginVersion(
                    domain: item.domain, item: item.rawValue, contentVersion: Array(object.version.utf8),
                    size: object.size, layout: store.layout, store.dbs)
            }
        } catch let failure as OriginFailure {
            throw CacheError.origin(failure, item: item.rawValue, domain: item.domain, strict: false)
        } catch is CancellationError {
            throw CacheError(.userCancelled, "listing the versions of \(item) was cancelled")
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "asking the origin of \(item.domain) about \(item)")
        }
    }
}
