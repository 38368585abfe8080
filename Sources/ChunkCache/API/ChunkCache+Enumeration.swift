import Foundation
import LMDBKit

extension ChunkCache {
    /// An enumerator of a container of `domain`, as `enumerator(for:request:)`: ``Item/rootContainer``,
    /// ``Item/workingSetContainer``, ``Item/trashContainer`` or a folder's identifier.
    /// - Throws: `noSuchItem` for an unknown domain or folder; `invalidArgument` for an item that is not a
    ///   folder.
    public func enumerator(for container: String, in domain: String) async throws -> ItemEnumerator {
        try Records.validate(domain: domain, item: container)
        let store = self.store
        let enumerated: EnumeratedContainer = container == Item.workingSetContainer ? .workingSet : .folder(container)
        try await runBlocking(
            doing: "opening an enumerator of \"\(container)\" in domain \"\(domain)\"", store: store.path
        ) {
            try store.environment.read { txn in
                _ = try Records.domain(domain, in: txn, store.dbs)
                guard !ItemNames.isContainer(container) else { return }
                guard let record = try txn.itemRecord(container, domain: domain, store.dbs) else {
                    throw CacheError(
                        .noSuchItem,
                        "there is no folder \"\(container)\" in domain \"\(domain)\"; enumerate root, workingSet, trash or an existing folder"
                    )
                }
                guard record.kind == .folder else {
                    throw CacheError(
                        .invalidArgument,
                        "\"\(container)\" in domain \"\(domain)\" is a \(record.kind), not a folder; enumerate its folder"
                    )
                }
            }
        }
        return ItemEnumerator(cache: self, domain: domain, container: enumerated)
    }

    /// An enumerator of every item of `domain`, whatever its folder: what a sync client or a mount follows.
    /// Its pages list items in no meaningful order (by identifier hash), stable as folder pages are.
    public func enumeratorOfAllItems(in domain: String) async throws -> ItemEnumerator {
        try Records.validate(domain: domain, item: nil)
        let store = self.store
        try await runBlocking(doing: "opening an enumerator of domain \"\(domain)\"", store: store.path) {
            try store.environment.read { txn in _ = try Records.domain(domain, in: txn, store.dbs) }
        }
        return ItemEnumerator(cache: self, domain: domain, container: .allItems)
    }

    /// Whether this process's fetches record `lastUsedDate` (on by default): off, like a `noatime` mount,
    /// items enter the working set only through `mark --used`.
    public var recordsLastUse: Bool {
        get { engine.usage.enabled.load(ordering: .relaxed) }
        set { engine.usage.enabled.store(newValue, ordering: .relaxed) }
    }

    /// Writes the last-use dates this process's fetches noted and has not written yet (they are otherwise
    /// written within a second of the first). Call before a short-lived process exits.
    public func flushUsage() async throws {
        let notes = engine.usage.take()
        guard !notes.isEmpty else { return }
        let engine = self.engine
        try await engine.store.writer.write { txn in try engine.usage.write(notes, in: &txn, engine: engine) }
    }
}
