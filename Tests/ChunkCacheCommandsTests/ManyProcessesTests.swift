import Foundation
import SeededRandom
import TestSupport
import Testing

@Suite("§2 §3 many processes on one store")
struct ManyProcessesTests {
    /// One fetch command line and what it asked for.
    struct Request {
        var arguments: [String]
        var start: Int64
        var length: Int64
        var alignment: Int64
        var out: String?
    }

    @Test(
        "A5 A18 B4 16 concurrent fetch processes get exact bytes while another process puts new versions and others open the store"
    )
    func concurrentFetchesAndPut() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            // 3 MiB + 777: text, random, a hole of zeros, random again.
            let content = try TestData.writeSparse(
                to: dir + "/static", length: (3 << 20) + 777,
                pieces: [
                    (0, TestData.text(count: 1 << 20, seed: 151)),
                    (1 << 20, TestData.random(count: 1 << 20, seed: 152)),
                    ((5 << 19), TestData.random(count: (1 << 19) + 777, seed: 153)),
                ])
            let size = Int64(content.count)
            try runJSON(store, ["put", "--domain", "d", "static", dir + "/static", "--version", "s1"])
            var churn: [[UInt8]] = []
            for round in 0..<3 {
                churn.append(TestData.random(count: 2 << 20, seed: 160 + UInt64(round)))
                try TestData.write(churn[round], to: dir + "/churn\(round)")
            }
            try runJSON(store, ["put", "--domain", "d", "churn", dir + "/churn0", "--version", "c0"])

            var generator = SplitMix64(seed: 170)
            var handOffs: [String] = []
            for round in 1...2 {
                var requests: [Request] = []
                for index in 0..<16 {
                    let start = Int64(generator.next() % UInt64(size + 100_000))
                    let length = Int64(1 + generator.next() % 600_000)
                    let alignments: [Int64?] = [nil, 1, 4096, 65536, 1 << 20]
                    let alignment = alignments[Int(generator.next() % 5)]
                    var arguments = [
                        "--store", store, "--json", "fetch", "--domain", "d", "static", "--range", "\(start):\(length)",
                    ]
                    if let alignment { arguments += ["--align", String(alignment)] }
                    if index % 5 == 4 { arguments += ["--version", "s1", "--strict"] }
                    var out: String?
                    if index % 4 == 3 {
                        out = dir + "/out-\(round)-\(index)"
                        arguments += ["--out", out!]
                    }
                    requests.append(
                        Request(
                            arguments: arguments, start: start, length: length, alignment: alignment ?? 4096, out: out))
                }
                // Start everything, then wait for everything; processes that only open the store run beside.
                let openers = Openers(store: store)
                let put = try CLIProcess([
                    "--store", store, "--json", "put", "--domain", "d", "churn", dir + "/churn\(round)", "--version",
                    "c\(round)",
                ])
                let fetches = try requests.map { try CLIProcess($0.arguments) }
                let putResult = put.wait()
                let results = fetches.map { $0.wait() }
                let opened = openers.stop()
                #expect(opened.failures.isEmpty, "every open beside the put and fetches worked: \(opened.failures)")

                #expect(putResult.exitCode == 0 && !putResult.terminatedBySignal, "\(putResult)")
                for (request, result) in zip(requests, results) {
                    #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                    guard result.exitCode == 0 else { continue }  // already reported just above
                    let json = try result.json()
                    try expectItemObject(json["item"], domain: "d", id: "static", size: size, contentVersion: "s1")
                    try expectFetchRules(
                        json, content: content, start: request.start, length: request.length,
                        alignment: request.alignment)
                    #expect(
                        try json.retrievedRange()
                            == expectedRetrievedRange(
                                start: request.start, length: request.length, alignment: request.alignment,
                                chunkSize: defaultChunkSize, size: size))
                    if let out = request.out {
                        #expect(try json.string("path") == out)
                    } else {
                        handOffs.append(try json.string("path"))
                    }
                }
            }
            #expect(Set(handOffs).count == handOffs.count, "B4: every hand-off has its own file")

            // The puts landed whole: every churn version is there, newest first, with its own bytes.
            let versions = try #require(
                try runJSON(store, ["versions", "--domain", "d", "churn"])["versions"] as? [[String: Any]])
            #expect(try versions.map { try $0.string("contentVersion") } == ["c2", "c1", "c0"])
            for round in 0..<3 {
                let fetched = try runJSON(
                    store, ["fetch", "--domain", "d", "churn", "--version", "c\(round)", "--strict"])
                #expect(
                    try TestData.read(try fetched.string("path"), count: (2 << 20) + 1) == churn[round], "c\(round)")
            }
            #expect(try runJSON(store, ["verify"]).array("corrupt").isEmpty)
            #expect(try runJSON(store, ["stat"]).int("versions") == 4)
        }
    }

    @Test("§2 four processes putting the same bytes and one putting other bytes at once store each chunk once")
    func concurrentPuts() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let same = TestData.random(count: 3_000_000, seed: 181)
            var other = same
            other[2_000_000] ^= 0xFF
            try TestData.write(same, to: dir + "/same")
            try TestData.write(other, to: dir + "/other")
            try runJSON(store, ["init"])
            let puts =
                try (0..<4).map { _ in
                    try CLIProcess(["--store", store, "--json", "put", "--domain", "d", "same", dir + "/same"])
                }
                + [try CLIProcess(["--store", store, "--json", "put", "--domain", "d", "other", dir + "/other"])]
            let results = puts.map { $0.wait() }
            var versions = Set<String>()
            for result in results {
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                if result.arguments.contains("same") && result.exitCode == 0 {
                    let json = try result.json()
                    versions.insert(
                        try expectItemObject(json["item"], domain: "d", id: "same", size: 3_000_000).contentVersion)
                }
            }
            #expect(versions.count == 1, "D2: the same bytes give the same version")

            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("versions") == 2)
            #expect(try stat.int("chunks") == 47, "46 shared chunks and the one that differs")
            #expect(try stat.int("uniqueBytes") == 3_000_000 + 65536)
            #expect(try stat.int("logicalBytes") == 6_000_000)
            #expect(try runJSON(store, ["verify"]).array("corrupt").isEmpty)
            let last = try runJSON(store, ["versions", "--domain", "d", "same"])
            #expect(try last.array("versions").count == 1)
            for (index, (item, bytes)) in [("same", same), ("other", other)].enumerated() {
                let fetched = try runJSON(store, ["fetch", "--domain", "d", item])
                #expect(try TestData.read(try fetched.string("path"), count: 3_000_001) == bytes)
                // E1: two versions were created, two bumps; then each fetch records its item's last use, one more.
                #expect(try fetched.domainVersion() == UInt64(2 + index))
            }
        }
    }

    @Test("A10 A12 fetches racing new versions of the same item get bytes of exactly the version they report")
    func fetchesRacingPutsOfTheSameItem() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            var contents: [String: [UInt8]] = [:]
            for round in 0..<3 {
                // Same length, every chunk different: a mixed response could not hide.
                contents["v\(round)"] = TestData.random(count: 1 << 20, seed: 190 + UInt64(round))
                try TestData.write(contents["v\(round)"]!, to: dir + "/v\(round)")
            }
            try runJSON(store, ["put", "--domain", "d", "live", dir + "/v0", "--version", "v0"])
            var generator = SplitMix64(seed: 199)
            for round in 1...2 {
                let put = try CLIProcess([
                    "--store", store, "--json", "put", "--domain", "d", "live", dir + "/v\(round)", "--version",
                    "v\(round)",
                ])
                var fetches: [(CLIProcess, Int64, Int64)] = []
                for index in 0..<8 {
                    let start = Int64(generator.next() % (1 << 20))
                    let length = Int64(1 + generator.next() % 400_000)
                    let range = index % 2 == 0 ? ["--range", "\(start):\(length)"] : []
                    fetches.append(
                        (
                            try CLIProcess(["--store", store, "--json", "fetch", "--domain", "d", "live"] + range),
                            index % 2 == 0 ? start : 0, index % 2 == 0 ? length : 1 << 20
                        ))
                }
                #expect(put.wait().exitCode == 0)
                for (process, start, length) in fetches {
                    let result = process.wait()
                    #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
                    guard result.exitCode == 0 else { continue }  // already reported just above
                    let json = try result.json()
                    let version = try expectItemObject(json["item"], domain: "d", id: "live", size: 1 << 20)
                        .contentVersion
                    let content = try #require(contents[version], "a version that was never put: \(version)")
                    #expect(["v\(round - 1)", "v\(round)"].contains(version), "round \(round) served \(version)")
                    try expectFetchRules(json, content: content, start: start, length: length, alignment: 4096)
                }
            }
        }
    }
}
