import Foundation
import SeededRandom
import TestSupport
import Testing

@testable import ChunkCache

/// The catalogue of CONTRACT §11: item metadata, versions (D2–D4), the domain version (E1), pages and
/// anchors (F1–F8), the working set (F9–F11).
@Suite struct CatalogueTests {
    @Test("D2 D3 D4: a favorite, a tag, sharing or a rename change only the metadata version; new bytes change both")
    func versionsOfChanges() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let first = try await put(cache, Array("one".utf8), as: id, in: dir).item
            var last = first.itemVersion
            let edits: [(String, () async throws -> Item)] = [
                ("favorite", { try await cache.setMetadata(MetadataEdit(favoriteRank: .set(7)), of: id).item }),
                ("tag", { try await cache.setMetadata(MetadataEdit(tagData: .set(Data([1, 2]))), of: id).item }),
                ("shared", { try await cache.setMetadata(MetadataEdit(isShared: true), of: id).item }),
                ("used", { try await cache.setMetadata(MetadataEdit(markUsed: true), of: id).item }),
                ("rename", { try await cache.moveItem(id, to: Item.rootContainer, renamingTo: "renamed").item }),
                ("trash", { try await cache.trashItem(id).item }),
                ("restore", { try await cache.moveItem(id, to: Item.rootContainer).item }),
            ]
            for (what, edit) in edits {
                let item = try await edit()
                #expect(
                    item.itemVersion.contentVersion == first.itemVersion.contentVersion,
                    "D3: \(what) changed the content version")
                #expect(
                    item.itemVersion.metadataVersion != last.metadataVersion, "D4: \(what) left the metadata version")
                #expect(item.itemVersion.metadataVersion.count <= 128, "D1")
                last = item.itemVersion
            }
            let second = try await put(cache, Array("two".utf8), as: id, in: dir).item
            #expect(
                second.itemVersion.contentVersion != first.itemVersion.contentVersion,
                "D2: new bytes, same content version")
            #expect(second.itemVersion.metadataVersion != last.metadataVersion, "D4")
            #expect(
                second.filename == "renamed" && second.favoriteRank == 7 && second.isShared,
                "a new version keeps the metadata")
            // The same edit again changes nothing: no new metadata version, no domain version.
            let before = try cache.domainVersion(of: "d")
            let again = try await cache.setMetadata(MetadataEdit(favoriteRank: .set(7)), of: id)
            #expect(!again.changed && again.item.itemVersion == second.itemVersion && again.domainVersion == before)
            #expect(try cache.domainVersion(of: "d") == before)
        }
    }

    @Test(
        "E5 §11: a page and a change batch carry the domain version they were read at, a settings bump included"
    )
    func pagesAndBatchesCarryDomainVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            for name in ["a", "b"] {
                try await put(cache, Array(name.utf8), as: ItemIdentifier(domain: "d", name), in: dir)
            }
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            let first = try await root.enumerateItems(startingAt: .initialPageSortedByName, suggestedPageSize: 1)
            #expect(first.domainVersion == DomainVersion(rawValue: 2) && first.nextPage != nil)
            try await put(cache, Array("c".utf8), as: ItemIdentifier(domain: "d", "c"), in: dir)
            let second = try await root.enumerateItems(startingAt: try #require(first.nextPage), suggestedPageSize: 1)
            #expect(second.domainVersion == DomainVersion(rawValue: 3), "the version the second page was read at")
            let batch = try await root.enumerateChanges(from: first.syncAnchor)
            #expect(batch.updated.map(\.filename) == ["c"] && batch.domainVersion == DomainVersion(rawValue: 3))
            // A settings change bumps the version with no item change: the next batch is empty, at the new version.
            _ = try await cache.setDomain("d", readAhead: 1 << 20)
            let quiet = try await root.enumerateChanges(from: batch.nextAnchor)
            #expect(quiet.updated.isEmpty && quiet.deleted.isEmpty && !quiet.moreComing)
            let now = try cache.domainVersion(of: "d")
            #expect(quiet.domainVersion == DomainVersion(rawValue: 4) && quiet.domainVersion == now)
        }
    }

    @Test(
        "§7 §11 D2: a put of an earlier version's bytes makes them current again: a change, a new domain version, newest in versions, served by fetch"
    )
    func revertByPut() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            // A fetch's last use, written a second later, would be a change of its own between the puts below.
            cache.recordsLastUse = false
            let id = ItemIdentifier(domain: "d", "doc")
            let a = Array("AAAA".utf8)
            let b = Array("BBBBBB".utf8)
            let first = try await put(cache, a, as: id, in: dir)
            let second = try await put(cache, b, as: id, in: dir)
            let all = try await cache.enumeratorOfAllItems(in: "d")
            let anchor = try await all.currentSyncAnchor()
            let third = try await put(cache, a, as: id, in: dir)
            #expect(
                third.item.itemVersion.contentVersion == first.item.itemVersion.contentVersion,
                "same bytes, same version (D2)")
            #expect(
                third.domainVersion == second.domainVersion.next(),
                "a revert is a change: the domain version moves (E1)")
            #expect(third.item.itemVersion.metadataVersion != second.item.itemVersion.metadataVersion)
            #expect(third.newChunks == 0 && third.storedBytes == 0, "nothing new stored: \(third)")
            #expect(try cache.domainVersion(of: "d") == third.domainVersion)
            let versions = try await cache.versions(of: id)
            #expect(
                versions.versions.map(\.contentVersion)
                    == [third, second].map { String(decoding: $0.item.itemVersion.contentVersion, as: UTF8.self) },
                "the reverted version is listed newest, once")
            #expect(versions.item.itemVersion == third.item.itemVersion && versions.item.documentSize == 4)
            let batch = try await all.enumerateChanges(from: anchor, suggestedBatchSize: 10)
            #expect(
                batch.updated.map(\.identifier) == ["doc"] && batch.updated.first?.documentSize == 4,
                "the revert is in the change log")
            #expect(try await cache.statistics().logicalBytes == 10, "the revived version is counted once")
            // The current version's bytes again change nothing (§7).
            let again = try await put(cache, a, as: id, in: dir)
            #expect(again.domainVersion == third.domainVersion && again.item.itemVersion == third.item.itemVersion)
            #expect(try await all.enumerateChanges(from: batch.nextAnchor, suggestedBatchSize: 10).updated.isEmpty)
            let fetched = try await cache.fetchContents(for: id)
            defer { unlink(fetched.url.path) }
            #expect(try TestData.read(fetched.url.path, count: 16) == a, "fetch serves what was put last")
            #expect(fetched.item.itemVersion.contentVersion == first.item.itemVersion.contentVersion)
            // Named versions: v1 holding the same bytes becomes current again the same way.
            let named = ItemIdentifier(domain: "d", "named")
            try await put(cache, a, as: named, version: "v1", in: dir)
            let v2 = try await put(cache, b, as: named, version: "v2", in: dir)
            let v1 = try await put(cache, a, as: named, version: "v1", in: dir)
            #expect(
                v1.item.itemVersion.contentVersion == Array("v1".utf8) && v1.domainVersion == v2.domainVersion.next())
            #expect(try await cache.versions(of: named).versions.map(\.contentVersion) == ["v1", "v2"])
            let served = try await cache.fetchContents(for: named)
            defer { unlink(served.url.path) }
            #expect(try TestData.read(served.url.path, count: 16) == a)
        }
    }

    @Test(
        "§11 D2: the same bytes put without a version keep the version that holds them; a new --version name is a new version"
    )
    func sameBytesKeepTheirVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let bytes = TestData.random(count: 100_000, seed: 18)
            let named = try await put(cache, bytes, as: id, version: "v1", in: dir)
            let unnamed = try await put(cache, bytes, as: id, in: dir)
            #expect(unnamed.item.itemVersion == named.item.itemVersion, "D2: no new content version for the same bytes")
            #expect(unnamed.domainVersion == named.domainVersion && unnamed.storedBytes == 0)
            #expect(try await cache.versions(of: id).versions.map(\.contentVersion) == ["v1"])
            // A new name is the caller's wish: a new version, current, sharing the chunks.
            let renamed = try await put(cache, bytes, as: id, version: "v2", in: dir)
            #expect(
                renamed.item.itemVersion.contentVersion == Array("v2".utf8)
                    && renamed.domainVersion == named.domainVersion.next())
            #expect(renamed.newChunks == 0)
            #expect(try await cache.versions(of: id).versions.map(\.contentVersion) == ["v2", "v1"])
            // Without a name, the current of the versions holding them is kept.
            let again = try await put(cache, bytes, as: id, in: dir)
            #expect(
                again.item.itemVersion.contentVersion == Array("v2".utf8)
                    && again.domainVersion == renamed.domainVersion)
        }
    }

    @Test(
        "E1 E5: the domain version only grows, across reopen, is read synchronously, and DomainVersion is Codable, Comparable and has next()"
    )
    func domainVersion() async throws {
        try await withTemporaryDirectory { dir in
            var seen: [DomainVersion] = []
            do {
                let cache = try await makeCache(dir)
                let id = ItemIdentifier(domain: "d", "x")
                seen.append(try await put(cache, [1], as: id, in: dir).domainVersion)
                seen.append(try await cache.setMetadata(MetadataEdit(isShared: true), of: id).domainVersion)
                seen.append(try await cache.trashItem(id).domainVersion)
            }
            let reopened = try await makeCache(dir)
            seen.append(
                try await reopened.setMetadata(
                    MetadataEdit(favoriteRank: .set(1)), of: ItemIdentifier(domain: "d", "x")
                ).domainVersion)
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.next() == $1 }, "E1: \(seen)")
            #expect(try reopened.domainVersion(of: "d") == seen.last!, "E5: read without awaiting")
            let encoded = try JSONEncoder().encode(seen.last!)
            #expect(try JSONDecoder().decode(DomainVersion.self, from: encoded) == seen.last!)
            #expect(seen.first! < seen.last!)
        }
    }

    @Test("F1: anchors and page tokens stay within 500 bytes, also for 255-byte names")
    func tokenSizes() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            for index in 0..<5 {
                let name = String(repeating: "é", count: 127) + "\(index)"  // 255 bytes
                let item = ItemIdentifier(domain: "d", "item\(index)")
                try await put(cache, [UInt8(index)], as: item, in: dir)
                _ = try await cache.moveItem(item, to: Item.rootContainer, renamingTo: name)
            }
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            for first in [EnumerationPage.initialPageSortedByName, .initialPageSortedByDate] {
                let page = try await root.enumerateItems(startingAt: first, suggestedPageSize: 1)
                let token = try #require(page.nextPage)
                #expect(token.rawValue.count <= 500 && page.syncAnchor.rawValue.count <= 500, "F1")
                #expect(token.description.utf8.count <= 500, "F1: the CLI's form too")
            }
        }
    }

    @Test("F2: the anchor of a listing is taken before its first page: every change after it comes through changes")
    func anchorBeforeFirstPage() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            for index in 0..<20 {
                try await put(cache, [UInt8(index)], as: ItemIdentifier(domain: "d", "i\(index)"), in: dir)
            }
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            let before = try await root.currentSyncAnchor()
            var changedDuringListing: Set<String> = []
            var step = 0
            let listing = try await listAll(root, pageSize: 3) {
                step += 1
                let id = "i\(step)"
                _ = try await cache.setMetadata(
                    MetadataEdit(favoriteRank: .set(UInt64(step))), of: ItemIdentifier(domain: "d", id))
                changedDuringListing.insert(id)
            }
            #expect(listing.items.count == 20)
            let batch = try await root.enumerateChanges(from: listing.anchor, suggestedBatchSize: 100)
            #expect(Set(batch.updated.map(\.identifier)) == changedDuringListing, "F2: changes during the listing")
            #expect(batch.updated.allSatisfy { $0.favoriteRank != nil })
            // The anchor read before the listing is at or before it: it sees at least those changes.
            let fromBefore = try await root.enumerateChanges(from: before, suggestedBatchSize: 100)
            #expect(Set(fromBefore.updated.map(\.identifier)).isSuperset(of: changedDuringListing))
        }
    }

    @Test("F3: with no change the same anchor comes back with moreComing false; any change moves it")
    func sameAnchorWithoutChanges() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, [1], as: ItemIdentifier(domain: "d", "a"), in: dir)
            let all = try await cache.enumeratorOfAllItems(in: "d")
            let anchor = try await all.currentSyncAnchor()
            let quiet = try await all.enumerateChanges(from: anchor)
            #expect(quiet.nextAnchor == anchor && !quiet.moreComing && quiet.updated.isEmpty && quiet.deleted.isEmpty)
            // A domain setting bumps the version without any item change: still no change, same anchor.
            _ = try await cache.setDomain("d", changeHistory: ChangeHistory(changes: 500, seconds: 3600))
            #expect(try await all.enumerateChanges(from: anchor).nextAnchor == anchor)
            _ = try await cache.setMetadata(MetadataEdit(isShared: true), of: ItemIdentifier(domain: "d", "a"))
            let moved = try await all.enumerateChanges(from: anchor)
            #expect(moved.nextAnchor != anchor && moved.updated.map(\.identifier) == ["a"] && !moved.moreComing)
        }
    }

    @Test("F4: with moreComing every intermediate anchor is distinct and resumes in a new enumerator of a new cache")
    func intermediateAnchors() async throws {
        try await withTemporaryDirectory { dir in
            var anchor: SyncAnchor
            do {
                let cache = try await makeCache(dir)
                try await importTree(cache, domain: "d", folders: 5, files: 40, in: dir)
                anchor = try await cache.enumeratorOfAllItems(in: "d").currentSyncAnchor()
                for index in 0..<40 {
                    _ = try await cache.setMetadata(
                        MetadataEdit(favoriteRank: .set(UInt64(index))),
                        of: ItemIdentifier(domain: "d", "file\(index).txt").resolved(in: dir, cache))
                }
            }
            var anchors: [SyncAnchor] = [anchor]
            var delivered: Set<String> = []
            var more = true
            while more {
                let cache = try await makeCache(dir)  // a new store handle and enumerator each batch
                let batch = try await cache.enumeratorOfAllItems(in: "d").enumerateChanges(
                    from: anchor, suggestedBatchSize: 7)
                #expect(batch.updated.count + batch.deleted.count <= 7, "F8")
                delivered.formUnion(batch.updated.map(\.identifier))
                anchor = batch.nextAnchor
                anchors.append(anchor)
                more = batch.moreComing
            }
            #expect(Set(anchors).count == anchors.count, "F4: an intermediate anchor repeated")
            #expect(delivered.count == 40, "every change delivered once the batches end")
        }
    }

    @Test(
        "F5 F6: anchors survive a restart; a malformed one, one of another store, of a removed domain, or older than the history is syncAnchorExpired"
    )
    func expiredAnchors() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, [1], as: id, in: dir)
            _ = try await cache.setDomain("d", changeHistory: ChangeHistory(changes: 5, seconds: 86_400))
            let all = try await cache.enumeratorOfAllItems(in: "d")
            let old = try await all.currentSyncAnchor()
            for rank in 0..<3 {
                _ = try await cache.setMetadata(MetadataEdit(favoriteRank: .set(UInt64(rank))), of: id)
            }
            let recent = try await all.currentSyncAnchor()
            // F5: a restart keeps both working.
            let reopened = try await makeCache(dir)
            #expect(try await reopened.enumeratorOfAllItems(in: "d").enumerateChanges(from: old).updated.count == 1)
            // F6: past the retained history (5 changes), the old anchor expires; the recent one still works.
            for rank in 3..<10 {
                _ = try await cache.setMetadata(MetadataEdit(favoriteRank: .set(UInt64(rank))), of: id)
            }
            #expect(
                await errorCode { _ = try await all.enumerateChanges(from: old) } == .syncAnchorExpired,
                "F6: older than the history")
            let fromRecent = await errorCode { _ = try await all.enumerateChanges(from: recent) }
            #expect(fromRecent == .syncAnchorExpired, "recent was 7 changes ago, beyond 5")
            let current = try await all.currentSyncAnchor()
            _ = try await cache.setMetadata(MetadataEdit(isShared: true), of: id)
            #expect(
                try await all.enumerateChanges(from: current).updated.map(\.identifier) == ["a"], "inside the window")
            // Malformed: garbage, truncated, one bit flipped.
            var flipped = Array(current.rawValue)
            flipped[10] ^= 1
            for bad in [Data("garbage".utf8), current.rawValue.dropLast(), Data(flipped), Data()] {
                #expect(
                    await errorCode { _ = try await all.enumerateChanges(from: SyncAnchor(rawValue: bad)) }
                        == .syncAnchorExpired, "F6: malformed")
            }
            // Another store's anchor.
            let other = try await ChunkCache.open(at: dir + "/other")
            try await put(other, [1], as: id, in: dir)
            let foreign = try await other.enumeratorOfAllItems(in: "d").currentSyncAnchor()
            #expect(
                await errorCode { _ = try await all.enumerateChanges(from: foreign) } == .syncAnchorExpired,
                "another store")
            // A domain removed and added again: its old anchors are of another epoch (F5: the baseline is gone).
            try await cache.removeDomain("d")
            try await put(cache, [1], as: id, in: dir)
            let fresh = try await cache.enumeratorOfAllItems(in: "d")
            #expect(
                await errorCode { _ = try await fresh.enumerateChanges(from: current) } == .syncAnchorExpired,
                "F5: an earlier epoch")
        }
    }

    @Test("F7: an unknown, malformed, foreign or stale page token is pageExpired")
    func expiredPages() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await importTree(cache, domain: "d", folders: 2, files: 30, in: dir)
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            let first = try await root.enumerateItems(startingAt: .initialPageSortedByName, suggestedPageSize: 2)
            let token = try #require(first.nextPage)
            #expect(try await root.enumerateItems(startingAt: token, suggestedPageSize: 2).items.count == 2)
            var flipped = Array(token.rawValue)
            flipped[5] ^= 0x40
            for bad in [Data(), Data([0]), Data("x".utf8), token.rawValue.dropLast(3), Data(flipped)] {
                #expect(
                    await errorCode { _ = try await root.enumerateItems(startingAt: EnumerationPage(rawValue: bad)) }
                        == .pageExpired, "F7: malformed")
            }
            let trash = try await cache.enumerator(for: Item.trashContainer, in: "d")
            #expect(
                await errorCode { _ = try await trash.enumerateItems(startingAt: token) } == .pageExpired,
                "F7: another container's token")
            // Stale: the history the listing began in was compacted.
            _ = try await cache.setDomain("d", changeHistory: ChangeHistory(changes: 1, seconds: 86_400))
            for index in 0..<3 {
                _ = try await cache.setMetadata(
                    MetadataEdit(favoriteRank: .set(UInt64(index))), of: ItemIdentifier(domain: "d", "f0"))
            }
            #expect(
                await errorCode { _ = try await root.enumerateItems(startingAt: token) } == .pageExpired, "F7: stale")
        }
    }

    @Test(
        "§11: pages are stable under concurrent renames, moves, deletions and creations: every item that exists throughout appears exactly once"
    )
    func stablePages() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let count = 120
            for index in 0..<count {
                try await put(
                    cache, [UInt8(index)], as: ItemIdentifier(domain: "d", String(format: "n%03d", index)), in: dir)
            }
            var serial = 0
            for sort in [EnumerationPage.initialPageSortedByName, .initialPageSortedByDate] {
                var rng = SplitMix64(seed: sort == .initialPageSortedByName ? 1 : 2)
                var deleted: Set<String> = []
                var created: Set<String> = []
                let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
                let listing = try await listAll(root, sortedBy: sort, pageSize: 7) {
                    for _ in 0..<4 {
                        serial += 1
                        let victim = String(format: "n%03d", Int(rng.next() % UInt64(count)))
                        guard !deleted.contains(victim) else { continue }
                        let id = ItemIdentifier(domain: "d", victim)
                        switch rng.next() % 4 {
                        case 0:  // a rename that moves it to the other end of the name order
                            _ = try await cache.moveItem(
                                id, to: Item.rootContainer, renamingTo: (rng.next() % 2 == 0 ? "a" : "z") + "\(serial)")
                        case 1:  // new bytes: newest in the date order
                            try await put(cache, [UInt8(truncatingIfNeeded: serial), 9], as: id, in: dir)
                        case 2:
                            _ = try await cache.deleteItem(id)
                            deleted.insert(victim)
                        default:
                            let fresh = "new\(serial)"
                            try await put(cache, [1], as: ItemIdentifier(domain: "d", fresh), in: dir)
                            created.insert(fresh)
                        }
                    }
                }
                let ids = listing.items.map(\.identifier)
                let survivors = (0..<count).map { String(format: "n%03d", $0) }.filter { !deleted.contains($0) }
                for id in survivors {
                    #expect(ids.filter { $0 == id }.count == 1, "\(id) listed \(ids.filter { $0 == id }.count) times")
                }
                #expect(Set(ids).isDisjoint(with: created), "items created during the listing come through changes")
                #expect(listing.pages > 10)
                // Clean up for the next order: recreate what was deleted.
                for victim in deleted { try await put(cache, [0], as: ItemIdentifier(domain: "d", victim), in: dir) }
                for fresh in created { _ = try await cache.deleteItem(ItemIdentifier(domain: "d", fresh)) }
            }
        }
    }

    @Test(
        "F9 F11: working-set items carry their real parent; trashed items are in it with parent trash, and a trashed folder's contents leave it"
    )
    func workingSet() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let tree = dir + "/ws"
            try FileManager.default.createDirectory(atPath: tree + "/docs/inner", withIntermediateDirectories: true)
            for file in ["docs/a.txt", "docs/inner/b.txt", "c.txt"] {
                try TestData.write(Array(file.utf8), to: tree + "/" + file)
            }
            _ = try await cache.import("w", fromDirectoryAt: URL(fileURLWithPath: tree)).result()
            func id(_ raw: String) -> ItemIdentifier { ItemIdentifier(domain: "w", raw) }
            let workingSet = try await cache.enumerator(for: Item.workingSetContainer, in: "w")
            #expect(try await listAll(workingSet).items.isEmpty, "nothing is recent, tagged, favorite or shared yet")
            _ = try await cache.setMetadata(MetadataEdit(tagData: .set(Data([7]))), of: id("docs/inner/b.txt"))
            _ = try await cache.setMetadata(MetadataEdit(favoriteRank: .set(1)), of: id("docs/a.txt"))
            _ = try await cache.setMetadata(MetadataEdit(isShared: true), of: id("c.txt"))
            _ = try await cache.setMetadata(MetadataEdit(markUsed: true), of: id("docs"))
            var members = snapshots(try await listAll(workingSet).items)
            #expect(Set(members.keys) == ["docs/inner/b.txt", "docs/a.txt", "c.txt", "docs"])
            #expect(
                members["docs/inner/b.txt"]?.parent == "docs/inner" && members["c.txt"]?.parent == Item.rootContainer,
                "F9")
            #expect(members.values.allSatisfy { $0.parent != Item.workingSetContainer }, "F9")
            var replica = try await Replica(workingSet)
            _ = try await cache.trashItem(id("docs"))
            members = snapshots(try await listAll(workingSet).items)
            #expect(
                members["docs"]?.parent == Item.trashContainer && members["docs"]?.trashed == true,
                "F11: trashed, in the working set")
            #expect(
                members["docs/a.txt"] == nil && members["docs/inner/b.txt"] == nil,
                "F11: a trashed folder's contents leave it")
            try await replica.catchUp(workingSet)
            #expect(replica.items.mapValues(ItemSnapshot.init) == members, "the working set's changes say the same")
            let trash = try await listAll(try await cache.enumerator(for: Item.trashContainer, in: "w")).items
            #expect(trash.map(\.identifier) == ["docs"])
            // Restored: the contents come back.
            _ = try await cache.moveItem(id("docs"), to: Item.rootContainer)
            members = snapshots(try await listAll(workingSet).items)
            #expect(
                members["docs/a.txt"] != nil && members["docs/inner/b.txt"]?.parent == "docs/inner"
                    && members["docs"]?.trashed == false)
            try await replica.catchUp(workingSet)
            #expect(replica.items.mapValues(ItemSnapshot.init) == members)
        }
    }

    @Test(
        "F10: a create, modify or delete under a folder is in that folder's next change batch; a move is in both the old and the new parent's"
    )
    func folderChanges() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let tree = dir + "/t"
            try FileManager.default.createDirectory(atPath: tree + "/x", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: tree + "/y", withIntermediateDirectories: true)
            try TestData.write([1], to: tree + "/x/a")
            try TestData.write([2], to: tree + "/x/b")
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)).result()
            let x = try await cache.enumerator(for: "x", in: "d")
            let y = try await cache.enumerator(for: "y", in: "d")
            let (fromX, fromY) = (try await x.currentSyncAnchor(), try await y.currentSyncAnchor())
            _ = try await cache.moveItem(ItemIdentifier(domain: "d", "x/a"), to: "y")
            _ = try await cache.deleteItem(ItemIdentifier(domain: "d", "x/b"))
            let xBatch = try await x.enumerateChanges(from: fromX)
            let yBatch = try await y.enumerateChanges(from: fromY)
            #expect(
                Set(xBatch.deleted) == ["x/a", "x/b"] && xBatch.updated.isEmpty, "F10: the old parent sees both leave")
            #expect(
                yBatch.updated.map(\.identifier) == ["x/a"] && yBatch.updated.first?.parentItemIdentifier == "y"
                    && yBatch.deleted.isEmpty,
                "F10: the new parent sees the arrival")
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            let rootBatch = try await root.enumerateChanges(from: fromX)
            #expect(rootBatch.updated.isEmpty && rootBatch.deleted.isEmpty, "nothing changed in the root")
            #expect(
                await errorCode { _ = try await cache.enumerator(for: "x/a", in: "d") } == .invalidArgument,
                "a file is not a container")
            #expect(await errorCode { _ = try await cache.enumerator(for: "nope", in: "d") } == .noSuchItem)
        }
    }

    @Test(
        "§11: 1,000 random changes while clients page and follow changes: each client's replica equals the listing, item by item"
    )
    func modelBased() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            var (folders, files) = try await importTree(cache, domain: "d", folders: 12, files: 80, in: dir)
            var rng = SplitMix64(seed: 42)
            var serial = 0
            func randomChange() async throws {
                serial += 1
                let pool = folders + files
                let target = pool[Int(rng.next() % UInt64(pool.count))]
                let id = ItemIdentifier(domain: "d", target)
                do {
                    switch rng.next() % 10 {
                    case 0:
                        _ = try await cache.setMetadata(
                            MetadataEdit(favoriteRank: rng.next() % 2 == 0 ? .set(rng.next() % 100) : .remove), of: id)
                    case 1:
                        _ = try await cache.setMetadata(
                            MetadataEdit(tagData: rng.next() % 2 == 0 ? .set(Data([UInt8(serial & 255)])) : .remove),
                            of: id)
                    case 2: _ = try await cache.setMetadata(MetadataEdit(isShared: rng.next() % 2 == 0), of: id)
                    case 3: _ = try await cache.trashItem(id)
                    case 4: _ = try await cache.moveItem(id, to: Item.rootContainer, renamingTo: "r\(serial)")
                    case 5: _ = try await cache.moveItem(id, to: folders[Int(rng.next() % UInt64(folders.count))])
                    case 6 where files.contains(target):
                        try await put(cache, Array("v\(serial)".utf8), as: id, in: dir)
                    case 7 where rng.next() % 4 == 0 && files.contains(target):
                        _ = try await cache.deleteItem(id)
                        files.removeAll { $0 == target }
                    case 8:
                        let fresh = "new\(serial)"
                        try await put(cache, Array(fresh.utf8), as: ItemIdentifier(domain: "d", fresh), in: dir)
                        files.append(fresh)
                    default: _ = try await cache.setMetadata(MetadataEdit(markUsed: true), of: id)
                    }
                } catch let error as CacheError where error.code == .invalidArgument || error.code == .fileExists {
                    // A move into its own subtree, or onto a taken name: refused, nothing changed.
                }
            }
            let all = try await cache.enumeratorOfAllItems(in: "d")
            let workingSet = try await cache.enumerator(for: Item.workingSetContainer, in: "d")
            let root = try await cache.enumerator(for: Item.rootContainer, in: "d")
            var replicas: [(ItemEnumerator, Replica)] = []
            for enumerator in [all, workingSet, root] {
                replicas.append(
                    (enumerator, try await Replica(enumerator) { for _ in 0..<5 { try await randomChange() } }))
            }
            var changes = serial
            while changes < 1_000 {
                for _ in 0..<Int(rng.next() % 20) { try await randomChange() }
                changes = serial
                for index in replicas.indices { _ = try await replicas[index].1.follow(replicas[index].0) }
            }
            for index in replicas.indices {
                let (enumerator, _) = replicas[index]
                try await replicas[index].1.catchUp(enumerator)
                let truth = snapshots(try await listAll(enumerator).items)
                let replica = replicas[index].1.items.mapValues(ItemSnapshot.init)
                #expect(replica.count == truth.count)
                for (id, item) in truth where replica[id] != item {
                    Issue.record(
                        "replica \(index): \(id) is \(replica[id].map(String.init(describing:)) ?? "missing"), listing says \(item)"
                    )
                }
                for id in replica.keys where truth[id] == nil {
                    Issue.record("replica \(index) keeps \(id), which the listing lacks")
                }
            }
        }
    }

    @Test(
        "F14: an item created and deleted between two anchors is reported deleted, harmless to a client that never saw it; deleting an unknown item changes nothing"
    )
    func deletedUnknown() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, [1], as: ItemIdentifier(domain: "d", "kept"), in: dir)
            let all = try await cache.enumeratorOfAllItems(in: "d")
            var replica = try await Replica(all)
            try await put(cache, [2], as: ItemIdentifier(domain: "d", "brief"), in: dir)
            _ = try await cache.deleteItem(ItemIdentifier(domain: "d", "brief"))
            let batch = try await all.enumerateChanges(from: replica.anchor)
            #expect(batch.deleted == ["brief"] && batch.updated.isEmpty)
            try await replica.catchUp(all)
            #expect(Set(replica.items.keys) == ["kept"])
            let version = try cache.domainVersion(of: "d")
            #expect(
                await errorCode { _ = try await cache.deleteItem(ItemIdentifier(domain: "d", "brief")) } == .noSuchItem)
            #expect(try cache.domainVersion(of: "d") == version)
        }
    }

    @Test("§11: verify reports an item missing from its listing and a listing entry that names no item")
    func verifyListing() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, [1], as: ItemIdentifier(domain: "d", "a"), in: dir)
            #expect(try await cache.verify().damagedRecords.isEmpty)
            let dbs = cache.store.dbs
            try await cache.store.writer.write { txn in
                let itemKey = Keys.item(domain: "d", id: "a")
                let item = try Records.item("a", domain: "d", in: txn, dbs)
                let keys = ListingIndex.keys(
                    domain: Keys.domain("d"), itemHash: Array(itemKey.suffix(16)), placement: item.placement)
                _ = try txn.delete(dbs.listing, key: keys.first!)
                let stray =
                    ListingIndex.prefix(domain: Keys.domain("d"), container: Item.rootContainer, sort: .name)
                    + Array("ghost".utf8) + [0]
                    + [UInt8](repeating: 7, count: 16)
                try txn.put(dbs.listing, key: stray, value: [])
            }
            let damaged = try await cache.verify().damagedRecords
            #expect(damaged.contains { $0.contains("listing entries of item \"a\"") }, "\(damaged)")
            #expect(damaged.contains { $0.contains("names no item") }, "\(damaged)")
        }
    }

    @Test("§11: a fetch sets lastUsedDate, batched: no domain version per fetch, the item joins the working set")
    func lastUsed() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "f")
            try await put(cache, Array(repeating: 3, count: 10_000), as: id, in: dir)
            let before = try cache.domainVersion(of: "d")
            for _ in 0..<20 {
                let result = try await cache.fetchPartialContents(
                    for: id, version: nil, minimalRange: ByteRange(location: 0, length: 100), aligningTo: 4096)
                unlink(result.url.path)
            }
            try await cache.flushUsage()
            let after = try cache.domainVersion(of: "d")
            #expect(after == before.next(), "20 fetches, one domain version for their last use")
            let members = try await listAll(try await cache.enumerator(for: Item.workingSetContainer, in: "d")).items
            #expect(members.map(\.identifier) == ["f"])
            let used = try #require(members.first?.lastUsedDate)
            #expect(abs(used.timeIntervalSinceNow) < 60)
            // Within the granularity, a fetch notes nothing.
            let result = try await cache.fetchContents(for: id)
            unlink(result.url.path)
            try await cache.flushUsage()
            #expect(try cache.domainVersion(of: "d") == after)
        }
    }
}

extension ItemIdentifier {
    /// The identifier of a file `importTree` made whose name is this one's, wherever its folder.
    func resolved(in dir: String, _ cache: ChunkCache) async throws -> ItemIdentifier {
        let all = try await listAll(try await cache.enumeratorOfAllItems(in: domain), pageSize: 1000).items
        return ItemIdentifier(domain: domain, all.first { $0.filename == rawValue }?.identifier ?? rawValue)
    }
}
