import Foundation
import TestSupport
import Testing

@Suite("§10 domain add, set, ls and rm through the CLI")
struct DomainCommandTests {
    static let secret = "Bearer tok-8f3a-SECRET"

    /// The domain object of §10, key by key.
    static func expectDomain(
        _ object: [String: Any], name: String, origin: String?, pipelineDepth: Int64, readAhead: Int64,
        domainVersion: UInt64,
        items: Int64 = 0, cachedBytes: Int64 = 0, headers: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(
            Set(object.keys).isSuperset(of: [
                "name", "origin", "pipelineDepth", "readAhead", "domainVersion", "items",
                "cachedBytes", "importFinished", "headers",
            ]), sourceLocation: sourceLocation)
        #expect(try object.string("name") == name, sourceLocation: sourceLocation)
        #expect(object["origin"] as? String == origin, "origin: \(object)", sourceLocation: sourceLocation)
        if origin == nil { #expect(object["origin"] is NSNull, sourceLocation: sourceLocation) }
        #expect(try object.int("pipelineDepth") == pipelineDepth, sourceLocation: sourceLocation)
        #expect(try object.int("readAhead") == readAhead, sourceLocation: sourceLocation)
        #expect(try object.domainVersion() == domainVersion, sourceLocation: sourceLocation)
        #expect(try object.int("items") == items, sourceLocation: sourceLocation)
        #expect(try object.int("cachedBytes") == cachedBytes, sourceLocation: sourceLocation)
        #expect(object["importFinished"] as? Bool == true, "importFinished: \(object)", sourceLocation: sourceLocation)
        #expect(object["headers"] as? [String] == headers, "headers: \(object)", sourceLocation: sourceLocation)
    }

    @Test("§10: domain add, set and ls give the exact settings, defaults where none is given, and the version bumps")
    func roundTrip() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try Self.expectDomain(
                try runJSON(store, ["domain", "add", "plain"]),
                name: "plain", origin: nil, pipelineDepth: 8, readAhead: 4 << 20, domainVersion: 1)
            let web = try runJSON(
                store,
                [
                    "domain", "add", "web", "--origin", "https://example.com/files",
                    "--header", "Authorization: \(Self.secret)", "--header", "X-Tenant:a",
                    "--pipeline-depth", "16", "--read-ahead", "1MiB",
                ])
            try Self.expectDomain(
                web, name: "web", origin: "https://example.com/files/", pipelineDepth: 16, readAhead: 1 << 20,
                domainVersion: 1, headers: ["Authorization", "X-Tenant"])
            let s3 = try runJSON(
                store,
                [
                    "domain", "add", "b", "--origin", "s3://bucket/pre", "--endpoint", "http://127.0.0.1:9000",
                    "--region", "us-east-1",
                ])
            try Self.expectDomain(
                s3, name: "b", origin: "s3://bucket/pre/", pipelineDepth: 8, readAhead: 4 << 20, domainVersion: 1)
            #expect(s3["endpoint"] as? String == "http://127.0.0.1:9000" && s3["region"] as? String == "us-east-1")

            let set = try runJSON(store, ["domain", "set", "web", "--read-ahead", "0"])
            try Self.expectDomain(
                set, name: "web", origin: "https://example.com/files/", pipelineDepth: 16, readAhead: 0,
                domainVersion: 2, headers: ["Authorization", "X-Tenant"])
            let replaced = try runJSON(
                store, ["domain", "set", "web", "--header", "X-Other: 1", "--pipeline-depth", "128"])
            try Self.expectDomain(
                replaced, name: "web", origin: "https://example.com/files/", pipelineDepth: 128, readAhead: 0,
                domainVersion: 3, headers: ["X-Other"])
            // The same settings again change nothing, so the version stays.
            #expect(try runJSON(store, ["domain", "set", "web", "--pipeline-depth", "128"]).domainVersion() == 3)

            // Each run is a new process: what ls shows was read back from the store.
            let listed = try runJSON(store, ["domain", "ls"]).array("domains").compactMap { $0 as? [String: Any] }
            #expect(listed.count == 3)
            try #require(listed.count == 3)
            #expect(try listed.map { try $0.string("name") } == ["b", "plain", "web"])
            try Self.expectDomain(
                listed[2], name: "web", origin: "https://example.com/files/", pipelineDepth: 128, readAhead: 0,
                domainVersion: 3, headers: ["X-Other"])

            let human = try runCLI(["--store", store, "domain", "ls"])
            #expect(human.exitCode == 0)
            let lines = human.stdout.split(separator: "\n")
            #expect(lines.count == 3 && lines[2].hasPrefix("web: https://example.com/files/"), "\(human)")
        }
    }

    @Test("§10: domain add of an existing domain is fileExists; domain set and rm of an unknown one are noSuchItem")
    func existence() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["domain", "add", "d"])
            expectError(
                try runCLI(["--store", store, "--json", "domain", "add", "d"]), exit: 1, code: "fileExists",
                mentions: ["\"d\""])
            expectError(
                try runCLI(["--store", store, "--json", "domain", "set", "x", "--pipeline-depth", "2"]),
                exit: 1, code: "noSuchItem", mentions: ["\"x\""])
            expectError(
                try runCLI(["--store", store, "--json", "domain", "rm", "x"]), exit: 1, code: "noSuchItem",
                mentions: ["\"x\""])
        }
    }

    @Test("§10 §7: each bad setting is a usage error (exit 64, invalidArgument) naming its flag, and changes nothing")
    func usageErrors() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["domain", "add", "d"])
            let cases: [([String], String)] = [
                (["--origin", "ftp://h/"], "--origin"),
                (["--origin", "http://user:pw@h/"], "--origin"),
                (["--origin", "http://h/?a=b"], "--origin"),
                (["--origin", "s3://bucket/p"], "--endpoint"),
                (["--origin", "s3://bucket/p", "--endpoint", "http://h"], "--region"),
                (["--origin", "s3://bucket/p", "--endpoint", "nope", "--region", "r"], "--endpoint"),
                (["--endpoint", "http://h"], "--endpoint"),
                (["--origin", "http://h/", "--region", "r"], "--region"),
                (["--header", "NoColon"], "--header"),
                (["--header", "Bad Name: v"], "--header"),
                (["--header", "Host: other"], "--header"),
                (["--pipeline-depth", "0"], "--pipeline-depth"),
                (["--pipeline-depth", "129"], "--pipeline-depth"),
                (["--read-ahead", "2GiB"], "--read-ahead"),
                (["--read-ahead", "lots"], "--read-ahead"),
            ]
            for (options, flag) in cases {
                for command in [["domain", "add", "new"], ["domain", "set", "d"]] {
                    let result = try runCLI(["--store", store, "--json"] + command + options)
                    expectError(result, exit: 64, code: "invalidArgument", mentions: [flag])
                }
            }
            let listed = try runJSON(store, ["domain", "ls"]).array("domains")
            #expect(listed.count == 1)
            try Self.expectDomain(
                try #require(listed.first as? [String: Any]), name: "d", origin: nil, pipelineDepth: 8,
                readAhead: 4 << 20, domainVersion: 1)
        }
    }

    @Test("§10: a header value (a credential) appears in no stdout or stderr of domain add, set, ls or an error")
    func credentialNeverPrinted() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            var outputs: [CLIResult] = []
            for json in [["--json"], []] {
                let domain = "d\(json.count)"
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + [
                            "domain", "add", domain, "--origin", "http://h/",
                            "--header", "Authorization: \(Self.secret)",
                        ]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + ["domain", "set", domain, "--header", "X-Key: \(Self.secret)"]))
                outputs.append(try runCLI(["--store", store] + json + ["domain", "ls"]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + [
                            "domain", "add", domain, "--header", "Authorization: \(Self.secret)",
                        ]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + ["domain", "add", "e", "--header", "Authorization \(Self.secret)"]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + ["domain", "add", "e", "--header", "Bad Name: \(Self.secret)"]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + ["domain", "add", "e", "--header", "X: \(Self.secret)\r\nY: 1"]))
                outputs.append(
                    try runCLI(
                        ["--store", store] + json + ["domain", "add", "e", "--origin", "https://u:\(Self.secret)@h/"]))
            }
            #expect(outputs.map(\.exitCode) == [0, 0, 0, 1, 64, 64, 64, 64, 0, 0, 0, 1, 64, 64, 64, 64], "\(outputs)")
            for result in outputs {
                #expect(!result.stdout.contains("SECRET") && !result.stderr.contains("SECRET"), "\(result)")
            }
            #expect(outputs[2].stdout.contains("X-Key") && outputs[10].stdout.contains("X-Key"))
        }
    }

    @Test("§10: domain rm frees the chunks only it used, keeps the shared ones, and the store verifies clean")
    func removeFreesChunks() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let shared = TestData.random(count: 3 * Int(defaultChunkSize), seed: 81)
            try TestData.write(shared, to: dir + "/shared")
            try TestData.write(TestData.random(count: 2 * Int(defaultChunkSize) + 100, seed: 82), to: dir + "/own")
            try runJSON(store, ["put", "--domain", "keep", "s", dir + "/shared"])
            let before = try runJSON(store, ["stat"])
            try runJSON(store, ["put", "--domain", "gone", "s", dir + "/shared"])
            try runJSON(store, ["put", "--domain", "gone", "own", dir + "/own"])
            let listed = try runJSON(store, ["domain", "ls"]).array("domains").compactMap { $0 as? [String: Any] }
            let gone = try #require(listed.first { $0["name"] as? String == "gone" })
            #expect(try gone.int("items") == 2 && gone.int("cachedBytes") == 5 * defaultChunkSize + 100)
            let during = try runJSON(store, ["stat"])
            #expect(try during.int("chunks") == before.int("chunks") + 3)

            #expect(try runJSON(store, ["domain", "rm", "gone"]).string("removed") == "gone")
            let after = try runJSON(store, ["stat"])
            for key in ["chunks", "uniqueBytes", "storedBytes", "items", "versions", "logicalBytes"] {
                #expect(try after.int(key) == before.int(key), "\(key)")
            }
            #expect(try after.int("domains") == 1)
            try runJSON(store, ["fetch", "--domain", "keep", "s", "--out", dir + "/back"])
            #expect(try TestData.read(dir + "/back", count: shared.count) == shared)
            #expect(try runJSON(store, ["verify"]).array("corrupt").isEmpty)
            expectError(
                try runCLI(["--store", store, "--json", "fetch", "--domain", "gone", "own"]), exit: 1,
                code: "noSuchItem")
        }
    }

    @Test(
        "C2: fetch of an unknown item of a domain whose origin refuses connections is serverUnreachable, not noSuchItem (-1005)"
    )
    func originItemNotConfirmed() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["domain", "add", "web", "--origin", "http://127.0.0.1:1/"])
            let result = try runCLI(["--store", store, "--json", "fetch", "--domain", "web", "a.bin"])
            expectError(result, exit: 1, code: "serverUnreachable", mentions: ["\"web\"", "origin"])
            #expect(!result.stdout.contains("-1005"))
        }
    }
}
