import FileIO
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// Import as the seed describes it (CONTRACT §8, §11): matching before hashing (G1), reimport, one
/// `importDidFinish` per epoch (G4).
@Suite struct ImportSeedTests {
    static func writeTree(_ root: String) throws {
        try FileManager.default.createDirectory(atPath: root + "/docs/old", withIntermediateDirectories: true)
        try TestData.write(TestData.text(count: 5000, seed: 1), to: root + "/docs/a.txt")
        try TestData.write(TestData.random(count: 100_000, seed: 2), to: root + "/docs/old/b.bin")
        try TestData.write(TestData.text(count: 300, seed: 3), to: root + "/top.txt")
    }

    /// Sets a file's modification time.
    static func setModified(_ path: String, to seconds: Int) {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        utimensat(AT_FDCWD, path, &times, 0)
    }

    /// Waits until domain `domain`'s import has finished (up to 60 s).
    static func waitForFinish(_ cache: ChunkCache, _ domain: String) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await cache.domains().first(where: { $0.name == domain })?.importFinished != true {
            try #require(ContinuousClock.now < deadline, "the import of \(domain) did not finish")
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test(
        "§8 seed 002: the system moves the directory into its cache, then calls the completion handler: at the handler the directory's path is gone and the domain exists"
    )
    func handlerAfterTakeOver() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            let seen = await withCheckedContinuation { (continuation: CheckedContinuation<(Bool, Bool, Bool), Never>) in
                cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)) { error in
                    let domainExists = (try? cache.domainVersion(of: "d")) != nil
                    continuation.resume(
                        returning: (error == nil, FileManager.default.fileExists(atPath: tree), domainExists))
                }
            }
            #expect(seen.0, "the handler gets no error")
            #expect(!seen.1, "the directory was moved before the handler ran: its path is no longer valid")
            #expect(seen.2, "the domain exists when the handler runs")
            try await Self.waitForFinish(cache, "d")
            let top = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "top.txt"))
            defer { unlink(top.url.path) }
            #expect(try TestData.read(top.url.path, count: 400) == TestData.text(count: 300, seed: 3))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir + "/store/imports").isEmpty,
                "the staging area is empty once the import finished")
        }
    }

    @Test(
        "§8 seed 002: the directory is taken over before anything is read: a file written at its path during the import does not land in it, and nothing stays behind"
    )
    func writesDuringImportMissTheTree() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            let wrote = Mutex(false)
            let hooks = ImportHooks(afterWalk: { _ in
                wrote.withLock { $0 = (try? TestData.write([1, 2, 3], to: tree + "/docs/new.txt")) != nil }
            })
            let result = try await cache.importTree("d", from: URL(fileURLWithPath: tree), copy: false, hooks: hooks)
            #expect(!wrote.withLock { $0 }, "the path is gone once the import began, as after mv")
            #expect(result.files == 3 && result.sourceRemoved && result.sourceRemovalError == nil, "\(result)")
            #expect(!FileManager.default.fileExists(atPath: tree), "nothing stays behind")
        }
    }

    /// Whether /dev/shm is a filesystem other than the temporary directory's, for a move across filesystems.
    static var otherFilesystem: String? {
        let shm = "/dev/shm"
        guard let here = try? FileSystem.status(NSTemporaryDirectory()), let there = try? FileSystem.status(shm),
            here.st_dev != there.st_dev, (try? FileSystem.checkAccess(shm, for: .write)) != nil
        else { return nil }
        return shm
    }

    @Test(
        "§8: a directory on another filesystem than the store cannot be moved in: refused before anything is touched, naming --copy; with copy it is imported and stays",
        .enabled(if: ImportSeedTests.otherFilesystem != nil, "needs a writable /dev/shm on another filesystem"))
    func otherFilesystemRefused() async throws {
        try await withTemporaryDirectory(in: try #require(Self.otherFilesystem)) { elsewhere in
            try await withTemporaryDirectory { dir in
                let tree = elsewhere + "/tree"
                try Self.writeTree(tree)
                let cache = try await makeCache(dir)
                let error = try await #require(throws: CacheError.self) {
                    _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)).result()
                }
                #expect(error.code == .invalidArgument, "\(error)")
                #expect(
                    error.message.contains(tree) && error.message.contains("--copy")
                        && error.message.contains("filesystem"), "\(error)")
                #expect(try await cache.statistics().domains == 0, "the store is as it was")
                #expect(try TestData.read(tree + "/top.txt", count: 400) == TestData.text(count: 300, seed: 3))
                _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
                try await Self.waitForFinish(cache, "d")
                #expect(FileManager.default.fileExists(atPath: tree + "/docs/old/b.bin"), "--copy leaves it")
            }
        }
    }

    @Test(
        "G1: reimport matches files by parent, name, size and modification time before reading them: same metadata, other bytes is not seen"
    )
    func matchBeforeHashing() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            Self.setModified(tree + "/top.txt", to: 1_700_000_000)
            let cache = try await makeCache(dir)
            let first = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            #expect(first.files == 3 && first.matchedFiles == 0 && first.finished)
            let version = try cache.domainVersion(of: "d")
            // Same size and time, other bytes: matched by metadata alone, so never read (G1).
            try TestData.write(TestData.text(count: 300, seed: 99), to: tree + "/top.txt")
            Self.setModified(tree + "/top.txt", to: 1_700_000_000)
            let again = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(again.matchedFiles == 3 && again.newChunks == 0, "\(again)")
            #expect(try cache.domainVersion(of: "d") == version, "nothing changed, nothing published")
            let top = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "top.txt"))
            #expect(
                try TestData.read(top.url.path, count: 400) == TestData.text(count: 300, seed: 3),
                "the stored bytes stay")
            unlink(top.url.path)
            // A new time: read, and a new version.
            Self.setModified(tree + "/top.txt", to: 1_700_000_100)
            let changed = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(changed.matchedFiles == 2 && changed.newChunks == 1)
            let versions = try await cache.versions(of: ItemIdentifier(domain: "d", "top.txt")).versions
            #expect(versions.count == 2)
        }
    }

    @Test(
        "G2: a file already stored with the same bytes under another modification time is read, matched by content: its item and content version stay, nothing new is stored"
    )
    func sameContentOtherTime() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            let id = ItemIdentifier(domain: "d", "docs/a.txt")
            let before = try await cache.versions(of: id)
            let chunks = try await cache.statistics().chunks
            Self.setModified(tree + "/docs/a.txt", to: 1_600_000_000)
            let again = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(
                again.matchedFiles == 2 && again.newChunks == 0,
                "the touched file is read, the others matched: \(again)")
            let after = try await cache.versions(of: id)
            #expect(after.item.itemVersion.contentVersion == before.item.itemVersion.contentVersion)
            #expect(
                after.versions.map(\.contentVersion) == before.versions.map(\.contentVersion),
                "no new version for equal bytes")
            #expect(try await cache.statistics().chunks == chunks)
        }
    }

    @Test(
        "E1 G1: a reimport of a tree whose file only got a new modification time moves nothing, and the next reimport matches it without reading"
    )
    func touchedFileMovesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            let id = ItemIdentifier(domain: "d", "docs/a.txt")
            let before = try await cache.versions(of: id)
            let version = try cache.domainVersion(of: "d")
            let all = try await cache.enumeratorOfAllItems(in: "d")
            let anchor = try await all.currentSyncAnchor()
            Self.setModified(tree + "/docs/a.txt", to: 1_600_000_000)
            let first = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(first.matchedFiles == 2, "the touched file is read once: \(first)")
            #expect(try cache.domainVersion(of: "d") == version, "E1: nothing changed, nothing moves")
            let second = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(
                second.matchedFiles == 3 && second.newChunks == 0,
                "G1: the new time was remembered, so the file is matched, not read: \(second)")
            #expect(try cache.domainVersion(of: "d") == version, "E1: nothing changed, nothing moves")
            let batch = try await all.enumerateChanges(from: anchor, suggestedBatchSize: 100)
            #expect(
                batch.updated.isEmpty && batch.deleted.isEmpty && batch.nextAnchor == anchor,
                "no change: \(batch.updated.map(\.identifier))")
            let after = try await cache.versions(of: id)
            #expect(after.item.itemVersion == before.item.itemVersion, "D2 D4: neither version of the item moved")
            #expect(after.versions.map(\.contentVersion) == before.versions.map(\.contentVersion))
        }
    }

    @Test(
        "§11 D2: a reimport of bytes an item holds under a named version keeps that version; an earlier version's bytes make it current again"
    )
    func reimportKeepsNamedVersion() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            let id = ItemIdentifier(domain: "d", "top.txt")
            let imported = try await cache.versions(of: id).item.itemVersion.contentVersion
            let bytes = TestData.text(count: 444, seed: 18)
            let named = try await put(cache, bytes, as: id, version: "v1", in: dir)
            // The tree's file gets the same bytes, under a time of its own: read, matched by content.
            try TestData.write(bytes, to: tree + "/top.txt")
            Self.setModified(tree + "/top.txt", to: 1_650_000_000)
            let again = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(again.matchedFiles == 2 && again.newChunks == 0, "\(again)")
            #expect(
                try cache.domainVersion(of: "d") == named.domainVersion, "E1: the bytes did not change, nothing moves")
            #expect(
                try await cache.versions(of: id).versions.map(\.contentVersion) == [
                    "v1", String(decoding: imported, as: UTF8.self),
                ],
                "D2: v1 stays the version of these bytes")
            // The tree's file back to the imported bytes: that version is current again, a change.
            try TestData.write(TestData.text(count: 300, seed: 3), to: tree + "/top.txt")
            _ = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            #expect(try cache.domainVersion(of: "d") == named.domainVersion.next())
            let versions = try await cache.versions(of: id)
            #expect(versions.item.itemVersion.contentVersion == imported && versions.versions.count == 2)
        }
    }

    @Test(
        "§11: a new file reimported where a moved item still holds its path gets another identifier, never another name"
    )
    func reimportBesideAMovedItem() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try FileManager.default.createDirectory(atPath: tree + "/F", withIntermediateDirectories: true)
            try TestData.write(Array("old h".utf8), to: tree + "/F/h")
            let cache = try await makeCache(dir)
            // The fetch below would record a last use a second later: a change of its own, not the reimport's.
            cache.recordsLastUse = false
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            _ = try await cache.moveItem(
                ItemIdentifier(domain: "d", "F/h"), to: Item.rootContainer, renamingTo: "moved")
            let folder = dir + "/F-now"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try TestData.write(Array("new h".utf8), to: folder + "/h")
            _ = try await cache.reimportItems(below: "F", in: "d", from: URL(fileURLWithPath: folder))
            let listed = try await listAll(try await cache.enumerator(for: "F", in: "d")).items
            #expect(listed.map(\.filename) == ["h"], "the name the user sees is the file's: \(listed.map(\.filename))")
            let new = try #require(listed.first)
            #expect(new.identifier != "F/h" && new.parentIdentifier == "F")
            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", new.identifier))
            defer { unlink(fetched.url.path) }
            #expect(try TestData.read(fetched.url.path, count: 16) == Array("new h".utf8))
            let moved = try await cache.versions(of: ItemIdentifier(domain: "d", "F/h")).item
            #expect(
                moved.filename == "moved" && moved.parentIdentifier == Item.rootContainer,
                "the moved item stays as it was")
            // A second reimport matches the new file by name: nothing moves.
            let version = try cache.domainVersion(of: "d")
            let again = try await cache.reimportItems(below: "F", in: "d", from: URL(fileURLWithPath: folder))
            #expect(again.matchedFiles == 1)
            #expect(try cache.domainVersion(of: "d") == version)
        }
    }

    @Test(
        "§11 reimport --below: new files created, changed ones versioned, missing ones deleted, each a change; renamed items are matched where they are"
    )
    func reimportBelow() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            try Self.writeTree(tree)
            let cache = try await makeCache(dir)
            _ = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree), copy: true).result()
            let all = try await cache.enumeratorOfAllItems(in: "d")
            var replica = try await Replica(all)
            let anchor = replica.anchor
            // The folder's new contents: a.txt changed, old/ gone, c.txt new.
            let folder = dir + "/docs-now"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try TestData.write(TestData.text(count: 7000, seed: 4), to: folder + "/a.txt")
            try TestData.write([1, 2, 3], to: folder + "/c.txt")
            let result = try await cache.reimportItems(below: "docs", in: "d", from: URL(fileURLWithPath: folder))
            #expect(result.files == 2 && result.matchedFiles == 0)
            let batch = try await all.enumerateChanges(from: anchor, suggestedBatchSize: 100)
            #expect(Set(batch.updated.map(\.identifier)) == ["docs/a.txt", "docs/c.txt"])
            #expect(Set(batch.deleted) == ["docs/old", "docs/old/b.bin"])
            try await replica.catchUp(all)
            #expect(replica.items.mapValues(ItemSnapshot.init) == snapshots(try await listAll(all).items))
            #expect(FileManager.default.fileExists(atPath: folder + "/c.txt"), "a reimport leaves its directory")
            #expect(
                await errorCode {
                    _ = try await cache.reimportItems(below: "top.txt", in: "d", from: URL(fileURLWithPath: folder))
                } == .invalidArgument)
            #expect(
                await errorCode {
                    _ = try await cache.reimportItems(below: "nope", in: "d", from: URL(fileURLWithPath: folder))
                } == .noSuchItem)
        }
    }

    @Test(
        "G4: a reimport asked before the first import finished joins it: one importDidFinish for both; a later reimport is an epoch of its own"
    )
    func reimportDuringImport() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            let extra = dir + "/extra"
            try Self.writeTree(tree)
            try FileManager.default.createDirectory(atPath: extra, withIntermediateDirectories: true)
            try TestData.write([7, 7, 7], to: extra + "/late.txt")
            let cache = try await makeCache(dir)
            let events = Mutex<[String]>([])
            cache.observeImportsFinished { domain in events.withLock { $0.append(domain) } }
            let store = cache.store
            let canonicalExtra = try FileSystem.canonicalPath(extra)
            // Asked while the import is under way (after its walk, before anything is published).
            let hooks = ImportHooks(afterWalk: { root in
                guard !root.hasSuffix("/extra") else { return }
                let token = try! store.writerToken()
                _ = try! store.writer.writeAndWait { txn in
                    try txn.beginReimport(
                        "d", from: canonicalExtra, below: Item.rootContainer, writer: token, store.dbs)
                }
            })
            let result = try await cache.importTree("d", from: URL(fileURLWithPath: tree), copy: true, hooks: hooks)
            #expect(result.finished)
            #expect(events.withLock { $0 } == ["d"], "G4: one importDidFinish for the import and the reimport")
            var info = try #require(try await cache.domains().first)
            #expect(info.importsFinished == 1 && info.importFinished)
            let ids = Set(try await listAll(try await cache.enumeratorOfAllItems(in: "d")).items.map(\.identifier))
            #expect(ids.contains("late.txt"), "the reimport's tree was taken in")
            _ = try await cache.reimportItems(in: "d", from: URL(fileURLWithPath: tree))
            info = try #require(try await cache.domains().first)
            #expect(
                info.importsFinished == 2 && events.withLock { $0.count } == 2, "a later reimport finishes on its own")
        }
    }
}
