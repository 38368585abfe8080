import Foundation
import SeededRandom
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Crash at any point (CONTRACT §6): the real `chunkcache` binary is killed with SIGKILL at random moments of
/// `put`, `import`, a cold `fetch` from an nginx origin, `evict`, `gc`, `domain sync` and the hot tier's
/// re-encoding, and after each kill fresh processes check what CONTRACT §6 ("nothing is lost on
/// any error: a failed write leaves the store as it was before it"), §12 and §14 promise:
///
/// - the store opens and `verify` finds no corrupt chunk, damaged version or record, and no inconsistency
///   (every chunk has its reference and every reference its chunk, reference counts equal the manifest
///   entries, `stat`'s counters equal a full recount);
/// - `stat` counts as many chunks as `verify` checked;
/// - every version committed before the kill, and the one being written if it landed, reads byte-exact;
/// - `sweep` with `--tmp-grace 0s` leaves the store's `tmp/` empty, and the next `--out` into a folder
///   leaves nothing of the killed writer there (a named `.chunkcache-*` staging file, where a filesystem has
///   no O_TMPFILE, and its sweep are `FetchOutKillTests`' in the integration tests).
///
/// Each kind kills `CHUNKCACHE_CRASH_KILLS` times (5 in CI: 35 kills across the seven kinds), at delays drawn
/// from `CHUNKCACHE_CRASH_SEED` uniformly between 0 and the operation's duration measured once in the same
/// run. Every failure names the seed, the round and the delay; `scripts/crash-soak.sh` runs 100 kills per
/// kind with a fresh seed.
@Suite("§6 crash at any point", .serialized)
struct CrashAtAnyPointTests {
    @Test(
        "kill -9 during put at random moments (storing deltas): the store opens, verify is clean, every committed version (and the killed one if it landed) reads byte-exact, stat agrees with a recount, no temp file stays (§6, §12, §14)"
    )
    func killedPuts() throws {
        try withTemporaryDirectory { dir in
            let harness = CrashHarness("put", in: dir)
            let base = CrashContent.mixed(count: 12 << 20, seed: harness.draw())
            let small = CrashContent.text(count: 100_000, seed: harness.draw())
            try TestData.write(base, to: dir + "/base")
            try TestData.write(small, to: dir + "/small")
            var committed: [CrashHarness.Expected] = []
            var duration = 0.0
            for round in 0..<CrashRun.kills {
                if round % CrashRun.roundsPerStore == 0 {  // a fresh store now and then keeps the checks short
                    harness.newStore("store\(round)")
                    try harness.run(["put", "--domain", "d", "big", dir + "/base", "--version", "v0"])
                    try harness.run(["put", "--domain", "d", "small", dir + "/small"])
                    // Measured on a put like the rounds': a new version sharing most chunks with the ones stored.
                    let measured = CrashContent.variant(of: base, seed: harness.draw())
                    try TestData.write(measured, to: dir + "/next")
                    duration = try harness.timed(["put", "--domain", "d", "big", dir + "/next", "--version", "m0"])
                    #expect(
                        try harness.run(["stat"]).int("deltaChunks") > 0,
                        "the rounds' puts store deltas, so kills land in their ingest \(harness.context)")
                    committed = [
                        .init(domain: "d", item: "big", version: "v0", bytes: base),
                        .init(domain: "d", item: "small", bytes: small),
                        .init(domain: "d", item: "big", version: "m0", bytes: measured),
                    ]
                }
                harness.round = round
                let version = "r\(round)"
                let bytes = CrashContent.variant(of: base, seed: harness.draw())
                try TestData.write(bytes, to: dir + "/next")
                let result = try harness.killAtRandom(
                    ["put", "--domain", "d", "big", dir + "/next", "--version", version], within: duration)

                try harness.expectStoreClean()
                let listed = Set(
                    try harness.run(["versions", "--domain", "d", "big"]).array("versions")
                        .compactMap { ($0 as? [String: Any])?["contentVersion"] as? String })
                let before = Set(committed.filter { $0.item == "big" }.compactMap(\.version))
                let landed = listed.contains(version)
                #expect(
                    listed.subtracting([version]) == before,
                    "the versions committed before the kill are all there, and nothing else \(harness.context): \(listed.sorted())"
                )
                if !result.terminatedBySignal { #expect(landed, "a put that exited 0 is committed \(harness.context)") }
                if landed {
                    committed.append(.init(domain: "d", item: "big", version: version, bytes: bytes))
                    harness.noteCommitted(result)
                }
                #expect(
                    try harness.run(["stat"]).int("versions") == Int64(committed.count),
                    "stat counts the committed versions \(harness.context)")
                try harness.expectReads(committed)
                try harness.expectNoTemporaryFiles()
            }
            harness.expectSomeKillsLanded()
        }
    }

    @Test(
        "kill -9 during import at random moments: the store opens and verifies clean, what was published reads byte-exact, import --resume finishes the tree once (§6, §8, §12)"
    )
    func killedImports() throws {
        try withTemporaryDirectory { dir in
            let harness = CrashHarness("import", in: dir)
            harness.newStore("store")
            let tree = dir + "/tree"
            let files = try CrashContent.tree(at: tree, seed: harness.draw())
            let folders = Set(
                files.keys.flatMap { path in
                    let parts = path.split(separator: "/").dropLast()
                    return parts.indices.map { parts[...$0].joined(separator: "/") }
                })
            let baseBytes = CrashContent.mixed(count: 3 << 20, seed: harness.draw())
            try TestData.write(baseBytes, to: dir + "/base")
            try harness.run(["put", "--domain", "d", "base", dir + "/base", "--version", "v1"])
            let base = [CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)]
            let duration = try harness.timed(["import", tree, "--domain", "warmup", "--copy"])
            try harness.run(["domain", "rm", "warmup"])

            for round in 0..<CrashRun.kills {
                harness.round = round
                let domain = "i\(round)"
                let result = try harness.killAtRandom(["import", tree, "--domain", domain, "--copy"], within: duration)
                try harness.expectStoreClean()
                try harness.expectReads(base)
                // What the import published before the kill reads byte-exact; the rest is not there yet.
                if try harness.domainNames().contains(domain) {
                    var present = 0
                    for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
                        if try harness.expectReadIfPresent(domain: domain, item: path, bytes) { present += 1 }
                    }
                    if !result.terminatedBySignal {
                        #expect(
                            present == files.count, "an import that exited 0 published every file \(harness.context)")
                    }
                    if present == files.count {
                        harness.noteCommitted(result)
                    } else if present > 0 {
                        harness.noteHalfway()
                    }
                } else {
                    #expect(result.terminatedBySignal, "an import that exited 0 made its domain \(harness.context)")
                }

                let resumed = try harness.run(["import", "--resume"])
                if try harness.domainNames().contains(domain) {
                    try harness.expectReads(files.map { .init(domain: domain, item: $0.key, bytes: $0.value) })
                    let info = try #require(
                        try harness.domain(domain), "the resumed domain is listed \(harness.context)")
                    #expect(
                        try info.int("items") == Int64(files.count + folders.count),
                        "every file and folder once after the resume \(harness.context): \(info)")
                    #expect(
                        info["importFinished"] as? Bool == true,
                        "the resumed import finished \(harness.context): \(resumed)")
                    try harness.expectStoreClean()
                    try harness.run(["domain", "rm", domain])
                }
                #expect(
                    try harness.run(["stat"]).int("domains") == 1, "only the base domain is left \(harness.context)")
                try harness.expectNoTemporaryFiles()
            }
            harness.expectSomeKillsLanded()
        }
    }

    @Test(
        "kill -9 during a cold fetch from an nginx origin (whole file or range, hand-off or --out) at random moments: committed downloads read byte-exact against the origin, no half file at the destination, no staging or temp file stays (§3, §6, §10)",
        .requires(NginxServer.self))
    func killedColdFetches() async throws {
        try await withTemporaryDirectory { dir in
            let harness = CrashHarness("fetch", in: dir)
            let remote = [
                "a.bin": CrashContent.mixed(count: 10 << 20, seed: harness.draw()),
                "sub/b.bin": CrashContent.text(count: (3 << 20) + 777, seed: harness.draw()),
            ]
            let out = dir + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try await harness.withOriginStore(remote) { baseBytes in
                // How long a cold whole fetch and a cold 1 MiB range take here.
                let whole = try harness.timed(["fetch", "--domain", "web", "a.bin", "--out", out + "/warmup"])
                let ranged = try harness.timed([
                    "fetch", "--domain", "web", "sub/b.bin", "--range", "1048576:1048576", "--out", out + "/warmup2",
                ])
                unlink(out + "/warmup")
                unlink(out + "/warmup2")
                let expected =
                    [CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)]
                    + remote.map { CrashHarness.Expected(domain: "web", item: $0.key, bytes: $0.value) }

                for round in 0..<CrashRun.kills {
                    harness.round = round
                    // mostly cold, sometimes half warm
                    if harness.draw(4) != 0 { try harness.run(["evict", "--domain", "web"]) }
                    let (item, bytes) = remote.sorted { $0.key < $1.key }[harness.draw(remote.count)]
                    // A killed named `.chunkcache-*` staging file (where there is no O_TMPFILE) and its sweep are
                    // FetchOutKillTests' (ChunkCacheIntegrationTests), with the fault point injected in-process.
                    var arguments = ["fetch", "--domain", "web", item]
                    var span = Span(0, Int64(bytes.count))
                    if harness.draw(2) == 0 {
                        let location = harness.draw(bytes.count)
                        span = Span(Int64(location), Int64(min(1 + harness.draw(3 << 20), bytes.count - location)))
                        arguments += ["--range", "\(span.location):\(span.length)"]
                    }
                    let destination = out + "/r\(round)"
                    let toFile = harness.draw(3) != 0
                    if toFile { arguments += ["--out", destination] }
                    let result = try harness.killAtRandom(
                        arguments, within: span.length == bytes.count ? whole : ranged)

                    // A destination has its name only once complete; a hand-off the process returned is the caller's.
                    if toFile, FileManager.default.fileExists(atPath: destination) {
                        let got = try TestData.read(destination, offset: span.location, count: Int(span.length))
                        #expect(
                            got == bytes.slice(span.location, span.length),
                            "a named destination holds the fetched bytes \(harness.context)")
                        #expect(
                            try TestData.status(destination).st_size == Int64(bytes.count),
                            "the destination has the item's length \(harness.context)")
                    } else if toFile {
                        #expect(
                            result.terminatedBySignal,
                            "a fetch --out that exited 0 left its destination \(harness.context)")
                    } else if !result.terminatedBySignal, let path = try? result.json().string("path") {
                        let got = try TestData.read(path, offset: span.location, count: Int(span.length))
                        #expect(
                            got == bytes.slice(span.location, span.length),
                            "the hand-off holds the fetched bytes \(harness.context)")
                        unlink(path)
                    }
                    unlink(destination)

                    try harness.expectStoreClean()
                    // Whole fetches into the same folder: the origin's files, byte for byte, with what the killed
                    // fetch committed and what is downloaded now; and nothing of the killed writer left beside them.
                    try harness.expectReads(expected, into: out)
                    let left = try FileManager.default.contentsOfDirectory(atPath: out)
                    #expect(
                        left.isEmpty,
                        "nothing stays beside the destination after the next --out there \(harness.context): \(left)")
                    try harness.expectNoTemporaryFiles()
                }
                harness.expectSomeKillsLanded()
            }
        }
    }

    @Test(
        "kill -9 during evict --domain at random moments: the store verifies clean, the pinned item keeps its chunks, every origin item reads byte-exact again, the local domain is untouched (§6, §12, H1)",
        .requires(NginxServer.self))
    func killedEvictions() async throws {
        try await withTemporaryDirectory { dir in
            let harness = CrashHarness("evict", in: dir)
            var remote: [String: [UInt8]] = ["p.bin": CrashContent.mixed(count: 1 << 20, seed: harness.draw())]
            for name in ["a.bin", "b.bin", "c/d.bin"] {
                remote[name] = CrashContent.mixed(count: 4 << 20, seed: harness.draw())
            }
            // Two items share a run of chunks, so eviction drops references to chunks that stay.
            remote["b.bin"]!.replaceSubrange(0..<(1 << 20), with: remote["a.bin"]![0..<(1 << 20)])
            try await harness.withOriginStore(remote) { baseBytes in
                let expected =
                    [CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)]
                    + remote.map { CrashHarness.Expected(domain: "web", item: $0.key, bytes: $0.value) }
                try harness.expectReads(expected)  // everything cached
                try harness.run(["pin", "--domain", "web", "p.bin"])
                let duration = try harness.timed(["evict", "--domain", "web"])
                try harness.expectReads(expected)  // cached again

                for round in 0..<CrashRun.kills {
                    harness.round = round
                    var arguments = ["evict", "--domain", "web"]
                    if harness.draw(3) == 0 { arguments += ["a.bin", "c/d.bin", "p.bin"] }
                    let result = try harness.killAtRandom(arguments, within: duration)
                    try harness.expectStoreClean()
                    let evicted = try #require(
                        try harness.run(["versions", "--domain", "web", "a.bin"]).array("versions").first
                            as? [String: Any])
                    if try evicted.int("cachedBytes") == 0 { harness.noteCommitted(result) }
                    let pinned = try #require(
                        try harness.run(["versions", "--domain", "web", "p.bin"]).array("versions").first
                            as? [String: Any])
                    #expect(
                        try pinned.int("cachedBytes") == pinned.int("size"),
                        "§12: a pinned item is never evicted \(harness.context): \(pinned)")
                    // downloads what the eviction dropped, and caches it for the next round
                    try harness.expectReads(expected)
                    try harness.expectNoTemporaryFiles()
                }
                harness.expectSomeKillsLanded()
            }
        }
    }

    @Test(
        "kill -9 during gc --keep-versions 1 at random moments (re-encoding the deltas of the bases it removes): the store verifies clean, each item's newest version stays, every version left reads byte-exact, stat agrees with a recount (§6, §12, §14)"
    )
    func killedGarbageCollections() throws {
        try withTemporaryDirectory { dir in
            let harness = CrashHarness("gc", in: dir)
            harness.newStore("store")
            let items = (0..<6).map { "g\($0)" }
            var bases: [String: [UInt8]] = [:]
            var committed: [String: [(version: String, bytes: [UInt8])]] = [:]
            var serial = 0
            func putVersion(of item: String) throws {
                let bytes = CrashContent.variant(of: bases[item]!, seed: harness.draw())
                try TestData.write(bytes, to: dir + "/next")
                serial += 1
                try harness.run(["put", "--domain", "d", item, dir + "/next", "--version", "s\(serial)"])
                committed[item, default: []].insert(("s\(serial)", bytes), at: 0)  // newest first, as `versions` lists
            }
            for item in items {
                bases[item] = CrashContent.mixed(count: (1 << 20) + harness.draw(1 << 20), seed: harness.draw())
                for _ in 0..<3 { try putVersion(of: item) }
            }
            #expect(
                try harness.run(["stat"]).int("deltaChunks") > 0,
                "the versions gc removes hold bases of deltas, so kills land in their re-encoding \(harness.context)")
            let duration = try harness.timed(["gc", "--keep-versions", "1"])
            for item in items { committed[item] = Array(committed[item]!.prefix(1)) }

            for round in 0..<CrashRun.kills {
                harness.round = round
                for item in items where harness.draw(3) != 0 {
                    for _ in 0..<(1 + harness.draw(3)) { try putVersion(of: item) }
                }
                let result = try harness.killAtRandom(["gc", "--keep-versions", "1"], within: duration)
                try harness.expectStoreClean()
                var left = 0
                for item in items {
                    let listed = try harness.run(["versions", "--domain", "d", item]).array("versions")
                        .compactMap { ($0 as? [String: Any])?["contentVersion"] as? String }
                    let known = committed[item]!
                    #expect(
                        listed.first == known.first?.version,
                        "the newest version of \(item) stays \(harness.context): \(listed)")
                    #expect(
                        Set(listed).isSubset(of: known.map(\.version)),
                        "no version of \(item) appears from nowhere \(harness.context): \(listed)")
                    if !result.terminatedBySignal {
                        #expect(
                            listed.count == 1,
                            "a gc that exited 0 kept one version of \(item) \(harness.context): \(listed)")
                    }
                    committed[item] = known.filter { listed.contains($0.version) }
                    left += committed[item]!.count
                }
                if left == items.count { harness.noteCommitted(result) }
                #expect(
                    try harness.run(["stat"]).int("versions") == Int64(left),
                    "stat counts the versions left \(harness.context)")
                try harness.expectReads(
                    items.flatMap { item in
                        committed[item]!.map { .init(domain: "d", item: item, version: $0.version, bytes: $0.bytes) }
                    })
                try harness.expectNoTemporaryFiles()
                // killed gcs left many versions: collect them, so each round's checks stay short
                if left > 4 * items.count {
                    try harness.run(["gc", "--keep-versions", "1"])
                    for item in items { committed[item] = Array(committed[item]!.prefix(1)) }
                    #expect(
                        try harness.run(["stat"]).int("versions") == Int64(items.count),
                        "a gc run to the end keeps one version an item \(harness.context)")
                }
            }
            harness.expectSomeKillsLanded()
        }
    }

    @Test(
        "kill -9 during domain sync at random moments: the store verifies clean, the listing is applied all or nothing (F12), a sync run again applies it, every origin file reads byte-exact (§6, §10, §11)",
        .requires(NginxServer.self))
    func killedSyncs() async throws {
        try await withTemporaryDirectory { dir in
            let harness = CrashHarness("sync", in: dir)
            let origin = dir + "/origin"
            var remote: [String: [UInt8]] = [:]
            var serial = 0
            var clock = Date().timeIntervalSince1970 - 1_000_000
            /// Writes an origin file with a modification time of its own, so its listing and ETag change even within a second.
            func write(_ name: String, count: Int) throws {
                serial += 1
                let bytes = CrashContent.mixed(count: count, seed: harness.draw())
                try FileManager.default.createDirectory(
                    atPath: origin + "/" + (name as NSString).deletingLastPathComponent,
                    withIntermediateDirectories: true)
                try TestData.write(bytes, to: origin + "/" + name)
                clock += 10
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSince1970: clock)], ofItemAtPath: origin + "/" + name)
                remote[name] = bytes
            }
            for folder in 0..<4 {
                for file in 0..<12 { try write("f\(folder)/x\(file).bin", count: 1 + harness.draw(200_000)) }
            }
            try await withNginx(serving: origin) { server in
                harness.newStore("store")
                let baseBytes = CrashContent.mixed(count: 2 << 20, seed: harness.draw())
                try TestData.write(baseBytes, to: dir + "/base")
                try harness.run(["put", "--domain", "d", "base", dir + "/base", "--version", "v1"])
                let base = [CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)]
                try harness.run(["domain", "add", "web", "--origin", server.baseURL])
                let duration = try harness.timed(["domain", "sync", "web"])

                for round in 0..<CrashRun.kills {
                    harness.round = round
                    let anchor = try harness.run(["anchor", "--domain", "web"]).string("syncAnchor")
                    // Between runs the origin gains files (one in a new folder), changes some and loses some.
                    var added = ["n\(round)/new.bin", "f\(harness.draw(4))/add\(round).bin"]
                    for name in added { try write(name, count: 1 + harness.draw(300_000)) }
                    let existing = remote.keys.filter { !added.contains($0) }.sorted()
                    var modified: [String] = []
                    var removed: [String] = []
                    for _ in 0..<3 {
                        let name = existing[harness.draw(existing.count)]
                        if !modified.contains(name) { modified.append(name) }
                    }
                    for _ in 0..<2 {
                        let name = existing[harness.draw(existing.count)]
                        if !modified.contains(name) && !removed.contains(name) { removed.append(name) }
                    }
                    for name in modified { try write(name, count: 1 + harness.draw(300_000)) }
                    for name in removed {
                        unlink(origin + "/" + name)
                        // a folder left empty goes too
                        rmdir(origin + "/" + (name as NSString).deletingLastPathComponent)
                        remote[name] = nil
                    }
                    added.append("n\(round)")

                    let result = try harness.killAtRandom(["domain", "sync", "web"], within: duration)
                    try harness.expectStoreClean()
                    try harness.expectReads(base)
                    let (updated, deleted) = try harness.changes(of: "web", since: anchor)
                    let applied = !updated.isEmpty || !deleted.isEmpty
                    if applied {
                        #expect(
                            updated.isSuperset(of: added + modified) && deleted.isSuperset(of: removed),
                            "F12: the killed sync applied the whole listing or nothing \(harness.context): updated \(updated.sorted()), deleted \(deleted.sorted())"
                        )
                    }
                    if !result.terminatedBySignal {
                        #expect(applied, "a sync that exited 0 applied the listing \(harness.context)")
                    }
                    if applied { harness.noteCommitted(result) }

                    try harness.run(["domain", "sync", "web"])
                    let (after, gone) = try harness.changes(of: "web", since: anchor)
                    #expect(
                        after.isSuperset(of: added + modified) && gone.isSuperset(of: removed),
                        "the next sync applies it \(harness.context)")
                    let folders = Set(remote.keys.map { ($0 as NSString).deletingLastPathComponent })
                    let info = try #require(try harness.domain("web"))
                    #expect(
                        try info.int("items") == Int64(remote.count + folders.count),
                        "the domain lists what the origin has \(harness.context): \(info)")
                    let sample = Set(
                        added.filter { remote[$0] != nil } + modified + [
                            remote.keys.sorted()[harness.draw(remote.count)]
                        ])
                    try harness.expectReads(sample.sorted().map { .init(domain: "web", item: $0, bytes: remote[$0]!) })
                    for name in removed { try harness.expectNoSuchItem(domain: "web", item: name) }
                    try harness.expectNoTemporaryFiles()
                }
                harness.expectSomeKillsLanded()
            }
        }
    }

    @Test(
        "kill -9 while the hot tier re-encodes chunks (promoting them in a fetch's last usage flush, cooling them in init --hot-size 0) at random moments: the store verifies clean, stat's counters (hotBytes, storedBytes) agree with a recount, every version reads byte-exact (§6, §14)"
    )
    func killedReencodes() throws {
        try withTemporaryDirectory { dir in
            let harness = CrashHarness("hot", in: dir)
            harness.newStore("store")
            var expected: [CrashHarness.Expected] = []
            for index in 0..<4 {
                let bytes = TestData.text(count: (1 << 20) + harness.draw(1 << 20), seed: harness.draw())
                try TestData.write(bytes, to: dir + "/f\(index)")
                try harness.run(["put", "--domain", "d", "f\(index)", dir + "/f\(index)", "--version", "v1"])
                expected.append(.init(domain: "d", item: "f\(index)", version: "v1", bytes: bytes))
            }
            let out = dir + "/out"
            /// Two fetches of each item, in two processes: their chunks become hot.
            func heat() throws {
                for _ in 0..<2 {
                    for item in expected {
                        try harness.run(["fetch", "--domain", "d", item.item, "--out", out, "--force"])
                    }
                }
            }
            try heat()
            #expect(
                try harness.run(["stat"]).int("hotChunks") > 0,
                "the items' chunks are hot, so kills land in their re-encoding \(harness.context)")
            let cooling = try harness.timed(["init", "--hot-size", "0"])
            try harness.run(["init", "--hot-size", "1GiB"])
            let fetching = try harness.timed(["fetch", "--domain", "d", "f0", "--out", out, "--force"])
            for round in 0..<CrashRun.kills {
                harness.round = round
                if round % 2 == 0 {
                    try heat()
                    let hot = try harness.run(["stat"]).int("hotChunks")
                    let result = try harness.killAtRandom(["init", "--hot-size", "0"], within: cooling)
                    let after = try harness.run(["stat"])
                    // The size commits first, then the cooling: a kill between or inside is halfway.
                    if try after.int("hotChunks") == 0 {
                        harness.noteCommitted(result)
                    } else if try after.int("hotSize") == 0 && result.terminatedBySignal {
                        harness.noteHalfway()
                    }
                    #expect(try after.int("hotChunks") <= hot, "\(harness.context)")
                    try harness.run(["init", "--hot-size", "1GiB"])
                } else {
                    // Cooled, with their counts kept: the killed fetch's last flush promotes the item's chunks.
                    try harness.run(["init", "--hot-size", "0"])
                    try harness.run(["init", "--hot-size", "1GiB"])
                    let item = expected[harness.draw(expected.count)].item
                    try harness.killAtRandom(
                        ["fetch", "--domain", "d", item, "--out", out, "--force"], within: fetching)
                }
                try harness.expectStoreClean()
                try harness.expectReads(expected)
                try harness.expectNoTemporaryFiles()
            }
            harness.expectSomeKillsLanded()
        }
    }
}

// MARK: - The run's settings

/// What the environment asks of a run.
enum CrashRun {
    /// Kills per operation kind: `CHUNKCACHE_CRASH_KILLS`, 5 unless set (30 across the six kinds).
    static let kills =
        ProcessInfo.processInfo.environment["CHUNKCACHE_CRASH_KILLS"].flatMap { Int($0) }.map { max(1, $0) } ?? 5
    /// The seed every draw comes from: `CHUNKCACHE_CRASH_SEED`, a fixed one unless set.
    static let seed = ProcessInfo.processInfo.environment["CHUNKCACHE_CRASH_SEED"].flatMap { UInt64($0) } ?? 20_261_126
    /// `put` starts a new store after this many rounds, so each check reads a bounded number of versions.
    static let roundsPerStore = 6
}

// MARK: - The harness

/// One operation kind's run: its store, its seeded draws, the kill, and the checks every kill is followed by.
/// Every check runs in a new `chunkcache` process, and every failure names the seed, the round and the delay.
final class CrashHarness {
    /// A version expected to read back exactly: the newest when `version` is nil (an origin item).
    struct Expected {
        var domain: String
        var item: String
        var version: String?
        var bytes: [UInt8]
    }

    let kind: String
    let dir: String
    private var rng: SplitMix64
    private(set) var store = ""
    var round = -1
    private var delay = 0.0
    private var operation: [String] = []
    private var killed = 0
    private var finished = 0
    private var killedAfterCommit = 0
    private var killedHalfway = 0

    /// Serves `remote` (paths under the origin's root) from nginx, and makes a new store with a local item
    /// `d/base` (version `v1`, 2 MiB, its bytes given to `body`) beside domain `web` on that origin.
    func withOriginStore(_ remote: [String: [UInt8]], _ body: ([UInt8]) async throws -> Void) async throws {
        let origin = dir + "/origin"
        for (name, bytes) in remote {
            try FileManager.default.createDirectory(
                atPath: origin + "/" + (name as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try TestData.write(bytes, to: origin + "/" + name)
        }
        try await withNginx(serving: origin) { server in
            newStore("store")
            let baseBytes = CrashContent.mixed(count: 2 << 20, seed: draw())
            try TestData.write(baseBytes, to: dir + "/base")
            try run(["put", "--domain", "d", "base", dir + "/base", "--version", "v1"])
            try run(["domain", "add", "web", "--origin", server.baseURL])
            try await body(baseBytes)
        }
    }

    init(_ kind: String, in dir: String) {
        self.kind = kind
        self.dir = dir
        // Each kind draws from its own stream of the seed, so one kind's draws do not shift another's.
        rng = SplitMix64(
            seed: CrashRun.seed ^ kind.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 })
        print(
            "crash at any point, \(kind): CHUNKCACHE_CRASH_SEED=\(CrashRun.seed) CHUNKCACHE_CRASH_KILLS=\(CrashRun.kills)"
        )
    }

    /// Names the moment in a failure message; `CHUNKCACHE_CRASH_SEED` replays the draws.
    var context: String {
        "[\(kind), CHUNKCACHE_CRASH_SEED=\(CrashRun.seed), round \(round), SIGKILL \(String(format: "%.1f", delay * 1000)) ms into `chunkcache \(operation.joined(separator: " "))`]"
    }

    func draw() -> UInt64 { rng.next() }

    /// A number in `0..<bound`.
    func draw(_ bound: Int) -> Int { Int(rng.next() % UInt64(max(bound, 1))) }

    func newStore(_ name: String) { store = dir + "/" + name }

    /// Runs `chunkcache --store STORE --json arguments…` to completion, requiring exit 0; returns its JSON object.
    @discardableResult
    func run(
        _ arguments: [String], environment: [String: String?] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        let result = try runCLI(["--store", store, "--json"] + arguments, env: environment)
        try #require(
            result.exitCode == 0 && !result.terminatedBySignal, "\(context) \(result)", sourceLocation: sourceLocation)
        return try result.json(sourceLocation: sourceLocation)
    }

    /// Runs the operation once to the end and returns how long it took, process start to exit: the span the
    /// kills are spread over.
    func timed(_ arguments: [String], environment: [String: String?] = [:]) throws -> Double {
        let start = ContinuousClock.now
        try run(arguments, environment: environment)
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Starts the operation and sends it SIGKILL after a delay drawn uniformly from `0...duration`. The
    /// process either dies of the signal or, when it was quicker, exits 0.
    @discardableResult
    func killAtRandom(
        _ arguments: [String], within duration: Double, environment: [String: String?] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> CLIResult {
        delay = Double(rng.next() % 1_000_001) / 1_000_000 * duration
        operation = arguments
        // Other processes open the store meanwhile: each open's crash clean-up must leave a live writer be.
        let openers = Openers(store: store)
        let process = try CLIProcess(["--store", store, "--json"] + arguments, environment: environment)
        usleep(useconds_t(delay * 1_000_000))  // the random moment of the crash
        process.kill9()
        let result = process.wait()
        let opened = openers.stop()
        #expect(opened.failures.isEmpty, "every open beside it worked \(context): \(opened.failures)")
        if result.terminatedBySignal {
            #expect(
                result.exitCode == SIGKILL, "died of SIGKILL, not of its own fault \(context): \(result)",
                sourceLocation: sourceLocation)
            killed += 1
        } else {
            #expect(
                result.exitCode == 0, "ran to the end without an error \(context): \(result)",
                sourceLocation: sourceLocation)
            finished += 1
        }
        return result
    }

    /// The store opens and `verify` (in a new process) finds nothing wrong: no corrupt chunk, damaged version,
    /// damaged record or inconsistency (references against chunks and manifests, counters against a recount);
    /// and `stat` counts as many chunks as `verify` checked.
    func expectStoreClean(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let verify = try runCLI(["--store", store, "--json", "verify"])
        try #require(
            verify.exitCode == 0 && !verify.terminatedBySignal, "the store opens and verifies \(context): \(verify)",
            sourceLocation: sourceLocation)
        let report = try verify.json(sourceLocation: sourceLocation)
        for key in ["corrupt", "damagedVersions", "damagedRecords", "inconsistencies"] {
            let found = try report.array(key, sourceLocation: sourceLocation)
            #expect(found.isEmpty, "verify lists \(key) \(context): \(found)", sourceLocation: sourceLocation)
        }
        let stat = try run(["stat"], sourceLocation: sourceLocation)
        #expect(
            try stat.int("chunks") == report.int("chunksChecked"),
            "stat counts the chunks verify checked \(context): \(stat)",
            sourceLocation: sourceLocation)
    }

    /// Each expected version reads back byte-exact through `fetch --out` (strict when a version is named) in
    /// a new process, into `folder` (a folder of its own unless given); the files are removed afterwards.
    func expectReads(
        _ expected: [Expected], into folder: String? = nil, environment: [String: String?] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let folder = folder ?? dir + "/check"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (index, item) in expected.enumerated() {
            let destination = folder + "/check-\(index)"
            var arguments = [
                "--store", store, "--json", "fetch", "--domain", item.domain, item.item, "--out", destination,
            ]
            if let version = item.version { arguments += ["--version", version, "--strict"] }
            let result = try runCLI(arguments, env: environment)
            #expect(
                result.exitCode == 0 && !result.terminatedBySignal,
                "version \(item.version ?? "newest") of \(item.domain)/\(item.item) reads \(context): \(result)",
                sourceLocation: sourceLocation)
            if result.exitCode == 0 {
                let got = try TestData.read(destination, count: item.bytes.count + 1)
                // Compared whole first (the standard library's loop); searched byte by byte only on a mismatch.
                let mismatch =
                    got == item.bytes
                    ? nil
                    : got.count != item.bytes.count
                        ? "length \(got.count) instead of \(item.bytes.count)"
                        : got.indices.first { got[$0] != item.bytes[$0] }.map { "first differing byte at \($0)" }
                #expect(
                    mismatch == nil,
                    "version \(item.version ?? "newest") of \(item.domain)/\(item.item) reads byte-exact \(context): \(mismatch ?? "")",
                    sourceLocation: sourceLocation)
            }
            unlink(destination)
        }
    }

    /// Reads an item that may not be published yet: byte-exact when it is there (returns true), `noSuchItem`
    /// when it is not (returns false), nothing else.
    func expectReadIfPresent(
        domain: String, item: String, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Bool {
        let destination = dir + "/check-present"
        let result = try runCLI(["--store", store, "--json", "fetch", "--domain", domain, item, "--out", destination])
        defer { unlink(destination) }
        guard result.exitCode == 0 else {
            let code = ((try? result.json())?["error"] as? [String: Any])?["code"] as? String
            #expect(
                code == "noSuchItem" && !result.terminatedBySignal,
                "\(domain)/\(item) reads or is not there yet \(context): \(result)",
                sourceLocation: sourceLocation)
            return false
        }
        let same = try TestData.read(destination, count: bytes.count + 1) == bytes
        #expect(
            same, "\(domain)/\(item), published before the kill, reads byte-exact \(context)",
            sourceLocation: sourceLocation)
        return true
    }

    /// A fetch of the item is `noSuchItem`.
    func expectNoSuchItem(domain: String, item: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try runCLI(["--store", store, "--json", "fetch", "--domain", domain, item, "--range", "0:1"])
        let code = ((try? result.json())?["error"] as? [String: Any])?["code"] as? String
        #expect(
            result.exitCode == 1 && code == "noSuchItem", "\(domain)/\(item) is gone \(context): \(result)",
            sourceLocation: sourceLocation)
    }

    /// `sweep` with `--tmp-grace 0s` (the grace period over) leaves the store's `tmp/` empty.
    func expectNoTemporaryFiles(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try run(["--tmp-grace", "0s", "sweep"], sourceLocation: sourceLocation)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: store + "/tmp")) ?? []
        #expect(
            left.isEmpty, "no temp file stays after the grace period \(context): \(left)",
            sourceLocation: sourceLocation)
    }

    /// The store's domain names (`domain ls`).
    func domainNames() throws -> Set<String> {
        Set(try run(["domain", "ls"]).array("domains").compactMap { ($0 as? [String: Any])?["name"] as? String })
    }

    /// The domain object of `domain ls`, or nil.
    func domain(_ name: String) throws -> [String: Any]? {
        try run(["domain", "ls"]).array("domains").compactMap { $0 as? [String: Any] }.first {
            $0["name"] as? String == name
        }
    }

    /// The identifiers `changes` reports updated and deleted since `anchor`.
    func changes(of domain: String, since anchor: String) throws -> (updated: Set<String>, deleted: Set<String>) {
        let batch = try run(["changes", "--domain", domain, "--since", anchor, "--batch", "100000"])
        #expect(batch["moreComing"] as? Bool == false, "one batch holds every change \(context)")
        let updated = try batch.array("updated").compactMap { ($0 as? [String: Any])?["id"] as? String }
        return (Set(updated), Set(try batch.array("deleted").compactMap { $0 as? String }))
    }

    /// Notes a killed operation whose change was already committed (for the summary: kills spread over the
    /// whole operation, before and after its commit).
    func noteCommitted(_ result: CLIResult) {
        if result.terminatedBySignal { killedAfterCommit += 1 }
    }

    /// Notes a killed operation that had committed part of its work (an import's first batches).
    func noteHalfway() { killedHalfway += 1 }

    /// At least one kill landed while the operation ran: the delays are not all too long.
    func expectSomeKillsLanded(sourceLocation: SourceLocation = #_sourceLocation) {
        print(
            "crash at any point, \(kind): \(killed) killed (\(killedAfterCommit) of them after the change was committed, \(killedHalfway) with part of it committed), \(finished) finished first (CHUNKCACHE_CRASH_SEED=\(CrashRun.seed))"
        )
        #expect(
            killed >= 1 || killed + finished < 3,
            "no kill landed while the operation ran [\(kind), CHUNKCACHE_CRASH_SEED=\(CrashRun.seed)]",
            sourceLocation: sourceLocation)
    }
}

/// Runs `body` with nginx serving `root` on 127.0.0.1, and stops it however `body` ends.
func withNginx(serving root: String, _ body: (NginxServer) async throws -> Void) async throws {
    let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

// MARK: - Contents

/// Seeded contents that take every path of a put: compressible text, incompressible bytes stored raw, and
/// zero runs stored as `zero` entries.
enum CrashContent {
    static let chunk = 64 << 10

    static func text(count: Int, seed: UInt64) -> [UInt8] { TestData.text(count: count, seed: seed) }

    /// `count` bytes in 64 KiB blocks, each text, random or zeros.
    static func mixed(count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            let length = min(chunk, count - bytes.count)
            switch rng.next() % 8 {
            case 0: bytes += [UInt8](repeating: 0, count: length)
            case 1, 2, 3: bytes += TestData.random(count: length, seed: rng.next())
            default: bytes += TestData.text(count: length, seed: rng.next())
            }
        }
        return bytes
    }

    /// `base` with a few blocks replaced, a few bytes edited, sometimes bytes inserted (shifting the rest) and its
    /// length changed a little: a new version sharing most chunks, whose other chunks are mostly deltas
    /// against the previous version's (CONTRACT §14).
    static func variant(of base: [UInt8], seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var bytes = base
        for _ in 0..<(1 + rng.next() % 4) {
            let block = Int(rng.next() % UInt64(max(1, bytes.count / chunk))) * chunk
            let length = min(chunk, bytes.count - block)
            bytes.replaceSubrange(block..<(block + length), with: mixed(count: length, seed: rng.next()))
        }
        for _ in 0..<2 where bytes.count > 64 {
            let at = Int(rng.next() % UInt64(bytes.count - 32))
            for i in at..<(at + 32) { bytes[i] ^= 0xA5 }
        }
        if rng.next() % 2 == 0, !bytes.isEmpty {
            let at = Int(rng.next() % UInt64(bytes.count))
            bytes.insert(contentsOf: TestData.random(count: 1 + Int(rng.next() % 300), seed: rng.next()), at: at)
        }
        let change = Int(rng.next() % 200_000)
        if rng.next() % 2 == 0 {
            bytes += TestData.random(count: change, seed: rng.next())
        } else {
            bytes.removeLast(min(change, bytes.count / 2))
        }
        return bytes
    }

    /// A tree of 24 files in `a/` and `b/c/` and at the top: sizes from a few bytes to 1.5 MiB (beyond the
    /// 1 MiB that import stores whole), some contents repeated. Returns the contents by relative path.
    static func tree(at root: String, seed: UInt64) throws -> [String: [UInt8]] {
        var rng = SplitMix64(seed: seed)
        var files: [String: [UInt8]] = [:]
        for index in 0..<24 {
            let folder = ["", "a/", "b/c/"][index % 3]
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            let bytes: [UInt8] =
                switch index {
                case 0, 1: mixed(count: (3 << 19) + index, seed: rng.next())
                // the same contents again
                case let i where i % 5 == 4: files.values.sorted { $0.count < $1.count }.first!
                default: mixed(count: 1 + Int(rng.next() % 300_000), seed: rng.next())
                }
            try TestData.write(bytes, to: root + "/\(folder)f\(index)")
            files["\(folder)f\(index)"] = bytes
        }
        return files
    }
}
