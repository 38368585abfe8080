import Foundation
import TestSupport
import Testing

/// The hot tier through the CLI (CONTRACT §14): `init --hot-size` and `stat`'s figures, across processes.
@Suite("§14 hot tier commands")
struct HotTierCommandTests {
    @Test(
        "§14: init --hot-size sets the hot tier (default the smaller of 10% of the bound and 1GiB); two fetches in two processes make chunks hot, stat prints hotSize, hotBytes and hotChunks; --hot-size 0 cools them"
    )
    func hotSizeAndFigures() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let created = try runJSON(store, ["init", "--max-size", "64MiB", "--min-free", "0"])
            #expect(try created.int("hotSize") == (64 << 20) / 10)
            #expect(try runJSON(store, ["init", "--hot-size", "128KiB"]).int("hotSize") == 128 << 10)
            let bytes = TestData.text(count: 6 * 65536, seed: 21)
            try TestData.write(bytes, to: dir + "/f")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/f"])
            #expect(try runJSON(store, ["stat"]).int("hotBytes") == 0)
            for round in 1...2 {
                try runJSON(store, ["fetch", "--domain", "d", "f", "--out", dir + "/out\(round)"])
            }
            var stat = try runJSON(store, ["stat"])
            #expect(try stat.int("hotSize") == 128 << 10)
            #expect(try stat.int("hotBytes") == 128 << 10 && (try stat.int("hotChunks")) == 2)
            let text = try runCLI(["--store", store, "stat"]).stdout
            #expect(text.contains("hot 128 KiB in 2 chunks, of 128 KiB"), "\(text)")
            #expect(try TestData.read(dir + "/out2", offset: 0, count: bytes.count) == bytes)
            #expect(try runJSON(store, ["verify"]).array("inconsistencies").isEmpty)
            #expect(try runJSON(store, ["init", "--hot-size", "0"]).int("hotSize") == 0)
            stat = try runJSON(store, ["stat"])
            #expect(try stat.int("hotBytes") == 0 && (try stat.int("hotChunks")) == 0)
            try runJSON(store, ["fetch", "--domain", "d", "f", "--out", dir + "/out3"])
            #expect(try TestData.read(dir + "/out3", offset: 0, count: bytes.count) == bytes)
            let verified = try runJSON(store, ["verify"])
            #expect(try verified.array("corrupt").isEmpty && (try verified.array("inconsistencies")).isEmpty)
        }
    }
}
