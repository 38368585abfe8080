import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("B5 §5 §7 leftover hand-off files and sweep")
struct SweepTests {
    /// A store holding one item, and `count` hand-off files from fetches of it.
    func storeWithHandOffs(in dir: String, count: Int) throws -> (store: String, paths: [String]) {
        let store = dir + "/store"
        try TestData.write(TestData.random(count: 100_000, seed: 91), to: dir + "/file")
        try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
        var paths: [String] = []
        for _ in 0..<count {
            paths.append(try runJSON(store, ["fetch", "--domain", "d", "doc"]).string("path"))
        }
        return (store, paths)
    }

    /// Sets a file's access and modification times `age` seconds into the past, as a crash long ago would leave it.
    func age(_ path: String, by seconds: Int) throws {
        let then = time(nil) - seconds
        var times = [timespec(tv_sec: then, tv_nsec: 0), timespec(tv_sec: then, tv_nsec: 0)]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test("B5 §5 a fresh hand-off survives other processes opening the store")
    func freshHandOffSurvives() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 1)
            for command in [
                ["stat"], ["verify"], ["versions", "--domain", "d", "doc"], ["sweep"],
                ["fetch", "--domain", "d", "doc", "--range", "0:1"],
            ] {
                try runJSON(store, command)
                #expect(exists(paths[0]), "after \(command)")
            }
            #expect(try TestData.read(paths[0], count: 200_000) == TestData.random(count: 100_000, seed: 91))
        }
    }

    @Test("B5 §5 opening the store deletes hand-off files older than the grace period, and only those")
    func openSweepsOldFiles() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 2)
            try age(paths[0], by: 2 * 3600)
            try runJSON(store, ["stat"])
            #expect(!exists(paths[0]), "older than the default hour")
            #expect(exists(paths[1]))
            try age(paths[1], by: 120)
            try runJSON(store, ["--tmp-grace", "1h", "stat"])
            #expect(exists(paths[1]), "two minutes is within an hour")
            try runJSON(store, ["--tmp-grace", "90s", "stat"])
            #expect(!exists(paths[1]), "two minutes is past 90 s")
        }
    }

    @Test("§7 sweep with the default grace leaves fresh hand-off files and removes none")
    func sweepKeepsFresh() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 2)
            #expect(try runJSON(store, ["sweep"]).int("removed") == 0)
            #expect(paths.allSatisfy(exists))
        }
    }

    @Test("§7 sweep --all removes every hand-off file and counts them")
    func sweepAll() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 3)
            #expect(try runJSON(store, ["sweep", "--all"]).int("removed") == 3)
            #expect(!paths.contains(where: exists))
            #expect(try runJSON(store, ["sweep", "--all"]).int("removed") == 0)
        }
    }

    @Test("§7 sweep --tmp-grace 0 removes the hand-off files and removed counts them")
    func sweepGraceZero() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 2)
            let json = try runJSON(store, ["sweep", "--tmp-grace", "0"])
            #expect(!paths.contains(where: exists))
            #expect(try json.int("removed") == 2, "removed counts what this call removed")
        }
    }

    @Test("§7 sweep removes hand-off files older than the default hour and removed counts them")
    func sweepOldFiles() throws {
        try withTemporaryDirectory { dir in
            let (store, paths) = try storeWithHandOffs(in: dir, count: 3)
            try age(paths[0], by: 2 * 3600)
            try age(paths[1], by: 3 * 3600)
            let json = try runJSON(store, ["sweep"])
            #expect(!exists(paths[0]) && !exists(paths[1]))
            #expect(exists(paths[2]))
            #expect(try json.int("removed") == 2, "removed counts what this call removed")
        }
    }

    @Test("§5 sweep never touches --out destinations")
    func sweepLeavesDestinations() throws {
        try withTemporaryDirectory { dir in
            let (store, _) = try storeWithHandOffs(in: dir, count: 0)
            try runJSON(store, ["fetch", "--domain", "d", "doc", "--out", dir + "/kept"])
            try age(dir + "/kept", by: 5 * 3600)
            try runJSON(store, ["sweep", "--all"])
            #expect(exists(dir + "/kept"))
        }
    }
}
