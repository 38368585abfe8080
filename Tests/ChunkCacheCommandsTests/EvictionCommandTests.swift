import Foundation
import TestSupport
import Testing

/// `gc`, `evict`, `pin` and `unpin` through the CLI (CONTRACT §12).
@Suite("§12 eviction commands")
struct EvictionCommandTests {
    @Test("§12 gc --keep-versions prints what it removed; evict of a domain without an origin is invalidArgument; pin and unpin print the item")
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
            expectError(try runCLI(["--store", store, "--json", "gc", "--keep-versions", "0"]), exit: 64, code: "invalidArgument")
            expectError(try runCLI(["--store", store, "--json", "evict", "--domain", "d"]), exit: 1, code: "invalidArgument", mentions: ["no origin"])
            let pinned = try runJSON(store, ["pin", "--domain", "d", "doc"])
            let first = try #require((try pinned.array("pinned")).first as? [String: Any])
            #expect(first["downloadedBytes"] as? Int == 0, "a domain without an origin holds everything already")
            let unpinned = try runJSON(store, ["unpin", "--domain", "d", "doc"])
            #expect(try unpinned.array("unpinned").count == 1)
        }
    }
}
