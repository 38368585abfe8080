import Foundation
import SeededRandom
import TestSupport
import Testing

@testable import ChunkCache

/// A tree of `folders` folders (some nested) holding `files` small files, written under `directory/tree` and
/// imported as `domain`. Returns the identifiers of the folders and files.
@discardableResult
func importTree(_ cache: ChunkCache, domain: String, folders: Int, files: Int, in directory: String, seed: UInt64 = 1)
    async throws -> (folders: [String], files: [String])
{
    let root = directory + "/tree-" + domain
    var rng = SplitMix64(seed: seed)
    var folderIDs: [String] = []
    for index in 0..<folders {
        let parent =
            folderIDs.isEmpty || rng.next() % 3 == 0 ? nil : folderIDs[Int(rng.next() % UInt64(folderIDs.count))]
        let id = (parent.map { $0 + "/" } ?? "") + "f\(index)"
        try FileManager.default.createDirectory(atPath: root + "/" + id, withIntermediateDirectories: true)
        folderIDs.append(id)
    }
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    var fileIDs: [String] = []
    for index in 0..<files {
        let parent =
            folderIDs.isEmpty || rng.next() % 4 == 0 ? nil : folderIDs[Int(rng.next() % UInt64(folderIDs.count))]
        let id = (parent.map { $0 + "/" } ?? "") + "file\(index).txt"
        try TestData.write(Array("content of \(id)".utf8), to: root + "/" + id)
        fileIDs.append(id)
    }
    _ = try await cache.import(domain, fromDirectoryAt: URL(fileURLWithPath: root)).result()
    return (folderIDs, fileIDs)
}

/// Every page of a listing, with the listing's anchor and the number of pages.
func listAll(
    _ enumerator: ItemEnumerator, sortedBy first: EnumerationPage = .initialPageSortedByName, pageSize: Int = 50,
    betweenPages: () async throws -> Void = {}
) async throws -> (items: [Item], anchor: SyncAnchor, pages: Int) {
    var items: [Item] = []
    var page = first
    var anchor: SyncAnchor?
    var pages = 0
    while true {
        let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: pageSize)
        pages += 1
        #expect(result.items.count <= pageSize, "F8: a page of \(result.items.count) items for a suggested \(pageSize)")
        items += result.items
        anchor = anchor ?? result.syncAnchor
        guard let next = result.nextPage else { break }
        page = next
        try await betweenPages()
    }
    return (items, anchor!, pages)
}

/// A client's copy of a container, kept by listing it and then following its changes, as the system does.
struct Replica {
    var items: [String: Item] = [:]
    var anchor: SyncAnchor

    /// Lists the container from scratch.
    init(_ enumerator: ItemEnumerator, pageSize: Int = 37, betweenPages: () async throws -> Void = {}) async throws {
        let listing = try await listAll(enumerator, pageSize: pageSize, betweenPages: betweenPages)
        for item in listing.items {
            #expect(items[item.identifier] == nil, "item \(item.identifier) listed twice")
            items[item.identifier] = item
        }
        anchor = listing.anchor
    }

    /// Applies one batch of changes; returns whether more are coming.
    mutating func follow(_ enumerator: ItemEnumerator, batchSize: Int = 23) async throws -> Bool {
        let batch = try await enumerator.enumerateChanges(from: anchor, suggestedBatchSize: batchSize)
        #expect(batch.updated.count + batch.deleted.count <= batchSize, "F8: a batch larger than suggested")
        if !batch.updated.isEmpty || !batch.deleted.isEmpty {
            #expect(batch.nextAnchor != anchor, "F3: changes were delivered but the anchor did not move")
        }
        for id in batch.deleted { items[id] = nil }  // F14: an unknown identifier is harmless
        for item in batch.updated { items[item.identifier] = item }
        anchor = batch.nextAnchor
        return batch.moreComing
    }

    /// Follows changes until none are coming; the last call returns the anchor it was given (F3).
    mutating func catchUp(_ enumerator: ItemEnumerator, batchSize: Int = 23) async throws {
        while try await follow(enumerator, batchSize: batchSize) {}
        let settled = try await enumerator.enumerateChanges(from: anchor, suggestedBatchSize: batchSize)
        #expect(settled.updated.isEmpty && settled.deleted.isEmpty && !settled.moreComing)
        #expect(settled.nextAnchor == anchor, "F3: with no change the same anchor comes back")
    }
}

/// What a client compares of an item.
struct ItemSnapshot: Hashable, CustomStringConvertible {
    let id: String, parent: String, filename: String, contentVersion: [UInt8], metadataVersion: [UInt8]
    let favorite: UInt64?, tag: Data?, shared: Bool, trashed: Bool, size: Int64

    init(_ item: Item) {
        id = item.identifier
        parent = item.parentItemIdentifier
        filename = item.filename
        contentVersion = item.itemVersion.contentVersion
        metadataVersion = item.itemVersion.metadataVersion
        favorite = item.favoriteRank
        tag = item.tagData
        shared = item.isShared
        trashed = item.isTrashed
        size = item.documentSize
    }

    var description: String { "\(id) in \(parent) as \(filename) m\(String(decoding: metadataVersion, as: UTF8.self))" }
}

func snapshots(_ items: some Sequence<Item>) -> [String: ItemSnapshot] {
    Dictionary(uniqueKeysWithValues: items.map { ($0.identifier, ItemSnapshot($0)) })
}
