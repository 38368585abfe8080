import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// Domains and their origin settings (CONTRACT §10): `addDomain`, `setDomain`, `domains`, `removeDomain`.
@Suite struct DomainTests {
    static let secret = "Bearer s3cr3t-token-value"

    @Test("§10: addDomain stores the origin and settings exactly, with the defaults where none is given")
    func addAndList() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let plain = try await cache.addDomain("plain")
            #expect(
                plain
                    == DomainInfo(
                        name: "plain", origin: nil, headerNames: [], pipelineDepth: 8, readAhead: 4 << 20,
                        domainVersion: DomainVersion(rawValue: 1), items: 0, cachedBytes: 0, importFinished: true,
                        changeHistory: .standard))
            let web = try await cache.addDomain(
                "web", origin: try Origin("HTTP://example.com:8080/files"),
                headers: [
                    try OriginHeader(parsing: "Authorization: \(Self.secret)"),
                    try OriginHeader(name: "X-Tenant", value: "a"),
                ],
                pipelineDepth: 3, readAhead: 0)
            #expect(web.origin?.url == "http://example.com:8080/files/")
            #expect(web.origin?.kind == .http)
            #expect(web.headerNames == ["Authorization", "X-Tenant"])
            #expect(web.pipelineDepth == 3 && web.readAhead == 0 && web.domainVersion == DomainVersion(rawValue: 1))
            let s3 = try await cache.addDomain(
                "bucket",
                origin: try Origin("s3://my-bucket/photos", endpoint: "https://s3.example.com/", region: "eu-west-1"))
            #expect(s3.origin?.url == "s3://my-bucket/photos/")
            #expect(s3.origin?.bucket == "my-bucket" && s3.origin?.prefix == "photos/")
            #expect(s3.origin?.endpoint == "https://s3.example.com" && s3.origin?.region == "eu-west-1")
            #expect(try await cache.domains().map(\.name) == ["bucket", "plain", "web"])
            #expect(try await cache.domains() == [s3, plain, web])
            #expect(await errorCode { _ = try await cache.addDomain("web") } == .fileExists)
        }
    }

    @Test("§10: setDomain changes only what is given and bumps the domain version; the same settings bump nothing")
    func set() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain(
                "d", origin: try Origin("https://h/"), headers: [try OriginHeader(name: "A", value: "1")])
            let deeper = try await cache.setDomain("d", pipelineDepth: 128)
            #expect(deeper.pipelineDepth == 128 && deeper.readAhead == 4 << 20 && deeper.headerNames == ["A"])
            #expect(deeper.origin?.url == "https://h/" && deeper.domainVersion == DomainVersion(rawValue: 2))
            let moved = try await cache.setDomain(
                "d", origin: try Origin("http://other/x/"), headers: [], readAhead: 1 << 30)
            #expect(moved.origin?.url == "http://other/x/" && moved.headerNames == [] && moved.readAhead == 1 << 30)
            #expect(moved.pipelineDepth == 128 && moved.domainVersion == DomainVersion(rawValue: 3))
            let same = try await cache.setDomain("d", pipelineDepth: 128)
            #expect(same.domainVersion == DomainVersion(rawValue: 3))
            #expect(try cache.domainVersion(of: "d") == DomainVersion(rawValue: 3))
            #expect(await errorCode { _ = try await cache.setDomain("nope", pipelineDepth: 2) } == .noSuchItem)
        }
    }

    @Test("§10: every setting out of range is invalidArgument naming its flag, and the store is left as it was")
    func validation() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain("d")
            let cases: [(String, () async throws -> Void)] = [
                ("--pipeline-depth", { _ = try await cache.addDomain("x", pipelineDepth: 0) }),
                ("--pipeline-depth", { _ = try await cache.setDomain("d", pipelineDepth: 129) }),
                ("--read-ahead", { _ = try await cache.addDomain("x", readAhead: -1) }),
                ("--read-ahead", { _ = try await cache.setDomain("d", readAhead: (1 << 30) + 1) }),
                ("--origin", { _ = try Origin("ftp://host/") }),
                ("--origin", { _ = try Origin("http:///nohost") }),
                ("--origin", { _ = try Origin("http://host/?q=1") }),
                ("--origin", { _ = try Origin("http://host:70000/") }),
                ("--origin", { _ = try Origin("http://user:pw@host/") }),
                ("--origin", { _ = try Origin("http://host/a b/") }),
                ("--endpoint", { _ = try Origin("s3://b/p", region: "r") }),
                ("--region", { _ = try Origin("s3://b/p", endpoint: "http://h") }),
                ("--region", { _ = try Origin("s3://b/p", endpoint: "http://h", region: "bad region") }),
                ("--endpoint", { _ = try Origin("s3://b/p", endpoint: "http://h/path", region: "r") }),
                ("--endpoint", { _ = try Origin("http://h/", endpoint: "http://e", region: nil) }),
                ("--origin", { _ = try Origin("s3:///p", endpoint: "http://h", region: "r") }),
                ("--header", { _ = try OriginHeader(parsing: "no colon here") }),
                ("--header", { _ = try OriginHeader(parsing: "Bad Name: v") }),
                ("--header", { _ = try OriginHeader(parsing: "Range: bytes=0-1") }),
                ("--header", { _ = try OriginHeader(name: "X-Evil", value: "a\r\nHost: evil") }),
            ]
            for (flag, body) in cases {
                let error = await caught(body)
                #expect(error?.code == .invalidArgument, "\(flag)")
                #expect(error?.message.contains(flag) == true, "\(error?.message ?? "no error") names \(flag)")
            }
            #expect(try await cache.domains().map(\.domainVersion) == [DomainVersion(rawValue: 1)])
            #expect(try await cache.domains().count == 1)
        }
    }

    @Test("§10: a header's value (a credential) is in no error message, description or dump")
    func headerValueHidden() throws {
        let header = try OriginHeader(parsing: "Authorization: \(Self.secret)")
        #expect(header.value == Self.secret)
        var dumped = ""
        dump(header, to: &dumped)
        for text in [header.description, "\(header)", String(reflecting: header), dumped] {
            #expect(!text.contains("s3cr3t"), "\(text)")
        }
        let failures: [() throws -> Void] = [
            { _ = try OriginHeader(parsing: "Authorization \(Self.secret)") },
            { _ = try OriginHeader(parsing: "Authorization: \(Self.secret)\n") },
            { _ = try OriginHeader(parsing: "Bad Name: \(Self.secret)") },
            { _ = try Origin("https://user:s3cr3t@h/") },
            { _ = try Origin("https://user:s3cr3t@h/a b/") },
            { _ = try Origin("s3://b/p", endpoint: "http://k:s3cr3t@h/x", region: "r") },
        ]
        for body in failures {
            #expect(throws: CacheError.self) { try body() }
            do { try body() } catch { #expect(!"\(error)".contains("s3cr3t"), "\(error)") }
        }
    }

    @Test("§10: the settings and header values survive reopening the store")
    func persisted() async throws {
        try await withTemporaryDirectory { dir in
            let path: String
            let added: DomainInfo
            do {
                let cache = try await makeCache(dir)
                path = cache.path
                added = try await cache.addDomain(
                    "d", origin: try Origin("s3://b/", endpoint: "http://127.0.0.1:9000", region: "us-east-1"),
                    headers: [try OriginHeader(parsing: "X-Key: \(Self.secret)")], pipelineDepth: 17, readAhead: 12345)
            }
            let reopened = try await ChunkCache.open(at: path)
            #expect(try await reopened.domains() == [added])
            let record = try reopened.store.environment.read { txn in
                try Records.domain("d", in: txn, reopened.store.dbs)
            }
            #expect(record.headers == [try OriginHeader(name: "X-Key", value: Self.secret)])
            #expect(record.origin?.prefix == "" && record.pipelineDepth == 17 && record.readAhead == 12345)
        }
    }

    @Test("§10: a domain record written before the origin settings existed reads as a domain without an origin")
    func olderRecord() throws {
        var writer = ByteWriter()
        writer.append(UInt64(7))
        writer.append(1.5)
        writer.append(UInt16(1))
        writer.appendPrefixed("Finder")
        let record = try writer.sealed().withUnsafeBytes { try DomainRecord(decoding: $0, name: "old") }
        #expect(record.version == 7 && record.nonMaterializingProcesses == ["Finder"])
        #expect(
            record.origin == nil && record.headers == [] && record.pipelineDepth == 8 && record.readAhead == 4 << 20)
        #expect(MissingItem.authority(of: record) == .store)
    }

    @Test("§10: removeDomain frees the domain's own chunks and keeps the ones another domain shares")
    func remove() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let shared = TestData.random(count: 65536 * 2, seed: 1)
            try await put(cache, shared, as: ItemIdentifier(domain: "keep", "s"), in: dir)
            let before = try await cache.statistics()
            try await put(cache, shared, as: ItemIdentifier(domain: "gone", "s"), in: dir)
            try await put(
                cache, TestData.random(count: 65536 * 3, seed: 2), as: ItemIdentifier(domain: "gone", "own"),
                version: "v1", in: dir)
            try await put(
                cache, TestData.random(count: 65536, seed: 3), as: ItemIdentifier(domain: "gone", "own"), version: "v2",
                in: dir)
            let listed = try await cache.domains().first { $0.name == "gone" }
            #expect(listed?.items == 2 && listed?.cachedBytes == 65536 * 6)
            try await cache.removeDomain("gone")
            let after = try await cache.statistics()
            #expect(
                after.chunks == before.chunks && after.uniqueBytes == before.uniqueBytes
                    && after.storedBytes == before.storedBytes)
            #expect(
                after.items == before.items && after.versions == before.versions
                    && after.logicalBytes == before.logicalBytes)
            #expect(after.domains == 1)
            let kept = try await cache.fetchContents(for: ItemIdentifier(domain: "keep", "s"))
            #expect(try TestData.read(kept.url.path, count: shared.count) == shared)
            #expect(await errorCode { try await cache.removeDomain("gone") } == .noSuchItem)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "gone", "own")) }
                    == .noSuchItem)
            #expect(try await cache.verify().damagedRecords.isEmpty)
        }
    }

    @Test(
        "C2: an unknown item of a domain whose origin refuses connections is serverUnreachable, never noSuchItem (-1005)"
    )
    func originItemUnconfirmed() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain("web", origin: try Origin("http://127.0.0.1:1/"))
            let error = await caught { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "a.bin")) }
            #expect(error?.code == .serverUnreachable)
            #expect(error?.code.rawValue != -1005)
            #expect(error?.message.contains("\"web\"") == true && error?.message.contains("origin") == true)
            #expect(try await cache.verify().damagedRecords.isEmpty)
            let versions = await caught { _ = try await cache.versions(of: ItemIdentifier(domain: "web", "a.bin")) }
            #expect(versions?.code == .serverUnreachable, "only the origin's 404 or 410 confirms an item gone")
        }
    }
}
