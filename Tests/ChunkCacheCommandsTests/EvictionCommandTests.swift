import Foundation
import TestSupport
import Testing

/// `gc`, `evict`, `pin` and `unpin` through the CLI (CONTRACT §12).
@Suite("§12 eviction commands")
struct EvictionCommandTests {
    @Test(
        "§12 gc --keep-versions prints what it removed; evict of a domain without an origin is invalidArgument; pin and unpin print the item"
    )
    func commands() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            for version in 1...3 {
                try TestData.write(TestData.random(count: 70_000, seed: UInt64(version)), to: dir + "/v\(version)")
                try runJSON(store, ["put", "--domain", "d", "doc", dir + "/v\(version)", "--version", "v\(version)"])
            }
            let gc = try runJSON(store, ["gc", "--keep-versions", "2"])
            #expect(try gc.int("removedVersions") == 1 && (try gc.int("removedBytes")) == 70_000)
            #expect(try runJSON(store, ["versions", "--domain", "d", "doc"]).array("versions").count == 2)
            expectError(
                try runCLI(["--store", store, "--json", "gc", "--keep-versions", "0"]), exit: 64,
                code: "invalidArgument")
            expectError(
                try runCLI(["--store", store, "--json", "evict", "--domain", "d"]), exit: 1, code: "invalidArgument",
                mentions: ["no origin"])
            let pinned = try runJSON(store, ["pin", "--domain", "d", "doc"])
            let first = try #require((try pinned.array("pinned")).first as? [String: Any])
            #expect(first["downloadedBytes"] as? Int == 0, "a domain without an origin holds everything already")
            let unpinned = try runJSON(store, ["unpin", "--domain", "d", "doc"])
            #expect(try unpinned.array("unpinned").count == 1)
        }
    }

    @Test(
        "§12 init --max-size and --min-free set the bound; stat prints maxSize, minFree, evictableBytes, pinnedBytes, hits, misses and evictedBytes"
    )
    func boundAndFigures() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let created = try runJSON(store, ["init", "--max-size", "64MiB", "--min-free", "0"])
            #expect(try created.int("maxSize") == 64 << 20 && (try created.int("minFree")) == 0)
            try TestData.write(TestData.random(count: 200_000, seed: 4), to: dir + "/f")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/f"])
            try runJSON(store, ["pin", "--domain", "d", "f"])
            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("maxSize") == 64 << 20 && (try stat.int("minFree")) == 0)
            #expect(try stat.int("pinnedBytes") == 200_000)
            #expect(try stat.int("evictableBytes") == 0, "a domain without an origin has nothing evictable")
            #expect(try stat.int("hits") == 0 && (try stat.int("misses")) == 0 && (try stat.int("evictedBytes")) == 0)
            // The bound is kept in the store: a later open without options keeps it.
            #expect(try runJSON(store, ["init"]).int("minFree") == 0)
            expectError(
                try runCLI(["--store", store, "--json", "init", "--min-free", "lots"]), exit: 64,
                code: "invalidArgument")
        }
    }

    @Test("§12: pinning a local file needs no room: a store bounded at 32 MiB that holds a 20 MiB local file pins it")
    func pinOfLocalFileNeedsNoRoom() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init", "--max-size", "32MiB", "--min-free", "0"])
            try TestData.write(TestData.random(count: 20 << 20, seed: 5), to: dir + "/f")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/f"])
            try runJSON(store, ["pin", "--domain", "d", "f"])
            #expect(try runJSON(store, ["stat"]).int("pinnedBytes") == 20 << 20)
        }
    }
}
