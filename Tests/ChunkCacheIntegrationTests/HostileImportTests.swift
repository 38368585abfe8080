import FileIO
import Foundation
import LMDBKit
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

/// Input that tries to break the engine: trees that hold the store, files swapped during an import,
/// sources that cannot be removed, and error texts with nothing to name.
@Suite struct HostileImportTests {
    /// A tree of three files (`a`, `sub/b`, `sub/c`) and a file outside it with other bytes.
    static func makeTree(in dir: String) throws -> (tree: String, outside: String) {
        let tree = dir + "/tree"
        try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
        try TestData.write(TestData.random(count: 70_000, seed: 1), to: tree + "/a")
        try TestData.write(TestData.random(count: 70_000, seed: 2), to: tree + "/sub/b")
        try TestData.write(TestData.random(count: 70_000, seed: 3), to: tree + "/sub/c")
        try TestData.write(TestData.random(count: 70_000, seed: 99), to: dir + "/outside")
        return (tree, dir + "/outside")
    }

    /// The store's counts, to show an error changed nothing.
    static func counts(_ cache: ChunkCache) async throws -> [Int64] {
        let s = try await cache.statistics()
        return [Int64(s.domains), Int64(s.items), Int64(s.versions), Int64(s.chunks), s.logicalBytes, s.storedBytes]
    }

    /// Ways a listed file is replaced after the walk, before it is read.
    enum Swap: String, CaseIterable, Sendable {
        case symlinkOutside, fifo, otherFile

        func apply(to path: String, outside: String) {
            switch self {
            case .symlinkOutside:
                unlink(path)
                symlink(outside, path)
            case .fifo:
                unlink(path)
                mkfifo(path, 0o600)
            case .otherFile:
                // Renamed over the listed file while that still exists, so the new one has another inode.
                _ = try? TestData.write(TestData.random(count: 70_000, seed: 99), to: path + ".new")
                rename(path + ".new", path)
            }
        }
    }

    @Test(
        "§8 seed 002: a file replaced after the walk (a symlink out of the tree, a FIFO, another file) is reported as that item's failure; the rest of the domain lives, the outside bytes are never served, and the file is back at the directory's path",
        arguments: Swap.allCases)
    func swappedAfterWalk(swap: Swap) async throws {
        try await withTemporaryDirectory { dir in
            let (tree, outside) = try Self.makeTree(in: dir)
            let cache = try await makeCache(dir)
            let hooks = ImportHooks(afterWalk: { root in swap.apply(to: root + "/sub/b", outside: outside) })
            let failures = Mutex<[ImportFailure]>([])
            cache.observeImportFailures { failure in failures.withLock { $0.append(failure) } }
            let result = try await cache.importTree("d", from: URL(fileURLWithPath: tree), copy: false, hooks: hooks)
            try Self.expectFailedEntry(result, cache, tree: tree)
            #expect(failures.withLock { $0 } == result.failures, "each failure is announced as it happens")
            let items = try await listAll(try await cache.enumeratorOfAllItems(in: "d")).items.map(\.identifier)
            #expect(Set(items) == ["a", "sub", "sub/c"], "the domain lives with the rest")
            #expect(try await cache.domains().first?.importFinished == true)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "sub/b")) }
                    == .noSuchItem,
                "the outside bytes are never served")
            let c = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "sub/c"))
            defer { unlink(c.url.path) }
            #expect(try TestData.read(c.url.path, count: 80_000) == TestData.random(count: 70_000, seed: 3))
            if swap == .symlinkOutside {
                #expect(
                    try FileSystem.symlinkTarget(tree + "/sub/b") == outside, "the link is back where the user had it")
            }
        }
    }

    /// `sub/b` failed, `a` and `sub/c` were imported: the domain stays with them, the failure is reported,
    /// and what was not imported is back at the directory's path.
    static func expectFailedEntry(_ result: ImportResult, _ cache: ChunkCache, tree: String) throws {
        #expect(result.files == 2 && result.finished, "\(result)")
        #expect(result.failures.map(\.path) == ["sub/b"], "\(result.failures)")
        #expect(result.failures.first?.error.message.contains("sub/b") == true, "\(result.failures)")
        #expect(!result.sourceRemoved && result.sourceRemovalError?.contains(tree) == true, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: tree + "/a"), "what was imported is in the store")
        #expect(
            FileManager.default.fileExists(atPath: tree + "/sub")
                && !FileManager.default.fileExists(atPath: tree + "/sub/c"))
    }

    @Test(
        "FIFOs hang: a file swapped for a FIFO during import is refused at once, as that entry's failure",
        .timeLimit(.minutes(1)))
    func fifoSwappedDuringImport() async throws {
        // The FIFO case of `swappedAfterWalk`, bounded: a blocking open would never return.
        try await withTemporaryDirectory { dir in
            let (tree, outside) = try Self.makeTree(in: dir)
            let cache = try await makeCache(dir)
            let hooks = ImportHooks(afterWalk: { root in Swap.fifo.apply(to: root + "/a", outside: outside) })
            let started = ContinuousClock.now
            let result = try await cache.importTree("d", from: URL(fileURLWithPath: tree), copy: true, hooks: hooks)
            let error = try #require(result.failures.first?.error)
            #expect(result.failures.map(\.path) == ["a"] && result.files == 2, "\(result)")
            #expect(error.code == .invalidArgument && error.message.contains("a FIFO"), "\(error)")
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    @Test("import of a directory that contains the store is refused before anything is read (canonical paths)")
    func treeHoldingTheStore() async throws {
        try await withTemporaryDirectory { dir in
            let (tree, _) = try Self.makeTree(in: dir)
            let cache = try await ChunkCache.open(at: tree + "/store")
            try await put(
                cache, TestData.random(count: 1000, seed: 5), as: ItemIdentifier(domain: "kept", "doc"), in: dir)
            let before = try await Self.counts(cache)
            symlink(tree, dir + "/link-to-tree")
            for (given, holder) in [
                (tree, tree), (dir, dir), (dir + "/link-to-tree", tree), (tree + "/store", tree + "/store"),
                (tree + "/store/tmp", tree + "/store/tmp"),
            ] {
                let error = try await #require(throws: CacheError.self) {
                    try await cache.import("x", fromDirectoryAt: URL(fileURLWithPath: given)).result()
                }
                #expect(error.code == .invalidArgument, "\(given): \(error)")
                #expect(
                    error.message.contains(holder) && error.message.contains(tree + "/store"),
                    "names both paths: \(error)")
            }
            #expect(try await Self.counts(cache) == before)
            #expect(FileManager.default.fileExists(atPath: tree + "/sub/b"), "the tree is untouched")
            let doc = try await cache.fetchContents(for: ItemIdentifier(domain: "kept", "doc"))
            #expect(
                try TestData.read(doc.url.path, count: 2000) == TestData.random(count: 1000, seed: 5),
                "every domain survives")
        }
    }

    @Test("import of a directory that contains the store is refused by identity: a hard link of data.mdb in the tree")
    func treeHoldingTheStoreFile() async throws {
        try await withTemporaryDirectory { dir in
            let (tree, _) = try Self.makeTree(in: dir)
            let cache = try await makeCache(dir)
            try #require(link(dir + "/store/data.mdb", tree + "/sub/copy.mdb") == 0)
            let error = try await #require(throws: CacheError.self) {
                try await cache.import("x", fromDirectoryAt: URL(fileURLWithPath: tree), copy: false).result()
            }
            #expect(error.code == .invalidArgument, "\(error)")
            #expect(
                error.message.contains(tree + "/sub/copy.mdb") && error.message.contains(dir + "/store"), "\(error)")
            #expect(FileManager.default.fileExists(atPath: tree + "/a"))
            #expect(try await cache.statistics().domains == 0)
        }
    }

    @Test(
        "import that cannot remove its source reports it: sourceRemovalError names the file and the reason",
        .enabled(if: getuid() == 0, "chattr +i needs root"))
    func sourceNotRemovable() async throws {
        try await withTemporaryDirectory { dir in
            let (tree, _) = try Self.makeTree(in: dir)
            let cache = try await makeCache(dir)
            // An immutable file: the parent-writable check passes, the removal after publishing fails.
            try runTool("chattr", "+i", tree + "/sub/c")
            defer { try? runTool("chattr", "-i", tree + "/sub/c") }
            let result = try await cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)).result()
            #expect(result.files == 3 && !result.sourceRemoved)
            let reason = try #require(result.sourceRemovalError)
            #expect(reason.contains(tree + "/sub/c") && reason.contains(String(cString: strerror(EPERM))), "\(reason)")
            #expect(!FileManager.default.fileExists(atPath: tree + "/a"), "what could be removed was")
            let c = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "sub/c"))
            #expect(try TestData.read(c.url.path, count: 80_000) == TestData.random(count: 70_000, seed: 3))
        }
    }

    @Test(
        "§8 import removes only what it imported: a file that appeared in the moved tree after the walk goes back to the directory's path, and the result says so"
    )
    func fileAddedDuringImportStays() async throws {
        try await withTemporaryDirectory { dir in
            let (tree, _) = try Self.makeTree(in: dir)
            let cache = try await makeCache(dir)
            let hooks = ImportHooks(afterWalk: { root in _ = try? TestData.write([1, 2, 3], to: root + "/sub/new") })
            let result = try await cache.importTree("d", from: URL(fileURLWithPath: tree), copy: false, hooks: hooks)
            #expect(result.files == 3 && !result.sourceRemoved)
            #expect(
                try TestData.read(tree + "/sub/new", count: 10) == [1, 2, 3],
                "never delete what the store does not hold")
            #expect(!FileManager.default.fileExists(atPath: tree + "/a"), "what was imported is gone from it")
            #expect(
                result.sourceRemovalError?.contains("back at " + tree) == true,
                "\(String(describing: result.sourceRemovalError))")
            let plain = try await cache.import(
                "e", fromDirectoryAt: URL(fileURLWithPath: try Self.makeTree(in: dir + "/again").tree)
            ).result()
            #expect(plain.sourceRemoved && plain.sourceRemovalError == nil)
        }
    }
}

@Suite struct ErrorNameTests {
    @Test("error messages with an empty path: no factory prints an empty name")
    func noEmptyNames() {
        let errors: [CacheError] = [
            .file(.noSpace, path: "", doing: ""), .file(.noSuchFile, path: "", doing: "opening"),
            .file(Errno(rawValue: EIO), path: " ", doing: "reading"),
            .lmdb(.mapFull, store: "", doing: ""), .lmdb(.corrupted, store: "", doing: "reading"),
            .wrap(Errno.noSpace, store: "", doing: "the operation"),
            .wrap(LMDBError.mapFull, store: "", doing: "the request"),
            .wrap(CocoaError(.fileReadUnknown), store: "", doing: ""),
        ]
        for error in errors {
            let message = error.message
            #expect(
                !message.contains("  ") && !message.contains("()") && !message.contains(" )")
                    && !message.hasPrefix(" "),
                "\(message)")
        }
        #expect(
            CacheError.file(.noSpace, path: "", doing: "").message
                == "no space left for a file (working); free disk space")
        #expect(
            CacheError.lmdb(.mapFull, store: "", doing: "storing x").message.hasPrefix(
                "the store is full while storing x"))
    }
}
