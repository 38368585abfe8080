import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path from an S3 origin: moto's server on 127.0.0.1, a versioned bucket (CONTRACT §10).
@Suite(.serialized) struct ColdPathS3Tests {
    /// A moto server that checks signatures, with the versioned bucket "media", and a store in `dir` whose
    /// domain "s3" has `s3://media/films/` as its origin; the AWS credentials are set for the body's time.
    static func withVersionedBucket(
        in dir: String, _ body: (ChunkCache, MotoServer) async throws -> Void
    ) async throws {
        let server = try await MotoServer.start(requireSignatures: true)
        do {
            setenv("AWS_ACCESS_KEY_ID", server.credentials.accessKeyID, 1)
            setenv("AWS_SECRET_ACCESS_KEY", server.credentials.secretAccessKey, 1)
            defer {
                unsetenv("AWS_ACCESS_KEY_ID")
                unsetenv("AWS_SECRET_ACCESS_KEY")
            }
            try await server.createBucket("media", versioned: true)
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain(
                "s3", origin: try Origin("s3://media/films/", endpoint: server.endpoint, region: server.region))
            try await body(cache, server)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Uploads `bytes` as `films/NAME` of the bucket "media" (through a file in `dir`) and returns its VersionId.
    static func put(_ bytes: [UInt8], as name: String, to server: MotoServer, in dir: String) async throws -> String {
        let path = dir + "/upload-" + UUID().uuidString
        try TestData.write(bytes, to: path)
        defer { unlink(path) }
        return try #require(
            try await server.putObject(bucket: "media", key: "films/" + name, file: URL(fileURLWithPath: path)))
    }

    @Test(
        "§10 S3: items are discovered in one signed ranged GET; the VersionId is the content version; older versions stay fetchable",
        .requires(MotoServer.self))
    func versionedBucket() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withVersionedBucket(in: dir) { cache, server in
                #expect(try await server.statusOfForgedRequest(bucket: "media") == 403, "moto checks signatures")
                let old = TestData.random(count: 3 << 20, seed: 31)
                let new = TestData.random(count: 3 << 20, seed: 32)
                let oldID = try await Self.put(old, as: "a.bin", to: server, in: dir)
                let item = ItemIdentifier(domain: "s3", "a.bin")
                let first = try await cache.fetchPartialContents(
                    for: item, version: nil, minimalRange: ByteRange(location: 70_000, length: 10), aligningTo: 4096)
                #expect(first.item.itemVersion.contentVersionString == oldID)
                #expect(first.item.documentSize == 3 << 20 && first.originRequests == 1)
                #expect(try readRange(first.url.path, first.retrievedRange) == Array(old[65_536..<131_072]))
                let newID = try await Self.put(new, as: "a.bin", to: server, in: dir)
                #expect(newID != oldID)
                // The old version is still the one the store knows, and S3 still has it by its VersionId.
                let older = try await cache.fetchPartialContents(
                    for: item, version: ItemVersion(oldID), minimalRange: ByteRange(location: 2 << 20, length: 65_536),
                    aligningTo: 4096, options: .strictVersioning)
                #expect(
                    try readRange(older.url.path, older.retrievedRange) == Array(old[(2 << 20)..<((2 << 20) + 65_536)]))
                let newer = try await cache.fetchPartialContents(
                    for: item, version: ItemVersion(newID), minimalRange: ByteRange(location: 1 << 20, length: 65_536),
                    aligningTo: 4096, options: .strictVersioning)
                #expect(newer.item.itemVersion.contentVersionString == newID)
                #expect(
                    try readRange(newer.url.path, newer.retrievedRange) == Array(new[(1 << 20)..<((1 << 20) + 65_536)]))
                let otherID = try await Self.put(old, as: "b.bin", to: server, in: dir)
                let listed = try await cache.versions(of: ItemIdentifier(domain: "s3", "b.bin"))
                #expect(listed.versions.map(\.contentVersion) == [otherID], "a HeadObject tells the VersionId")
                #expect(listed.versions.first?.cachedBytes == 0)
                try await server.deleteObject(bucket: "media", key: "films/a.bin")
                #expect(
                    await errorCode {
                        _ = try await cache.fetchPartialContents(
                            for: ItemIdentifier(domain: "s3", "missing.bin"), version: nil,
                            minimalRange: ByteRange(location: 0, length: 1), aligningTo: 1)
                    } == .noSuchItem)
            }
        }
    }

    @Test(
        "A12 §10: a non-strict fetch of a version the store does not know asks the origin for it first (a versioned S3 bucket still holds it), and serves the current version only when the origin lacks it",
        .requires(MotoServer.self))
    func nonStrictFetchOfAnUnknownVersion() async throws {
        try await withTemporaryDirectory { dir in
            try await Self.withVersionedBucket(in: dir) { cache, server in
                let v1 = TestData.random(count: 1 << 20, seed: 33)
                let v2 = TestData.random(count: 1 << 20, seed: 34)
                var ids: [String: (v1: String, v2: String)] = [:]
                for name in ["unknown.bin", "known.bin"] {
                    ids[name] = (
                        try await Self.put(v1, as: name, to: server, in: dir),
                        try await Self.put(v2, as: name, to: server, in: dir)
                    )
                }
                // The store knows nothing of "unknown.bin"; of "known.bin" only its current version, v2.
                let current = try await cache.fetchContents(for: ItemIdentifier(domain: "s3", "known.bin"))
                #expect(current.item.itemVersion.contentVersionString == ids["known.bin"]?.v2)
                try? FileManager.default.removeItem(at: current.url)
                for (name, id) in ids {
                    let old = try await cache.fetchPartialContents(
                        for: ItemIdentifier(domain: "s3", name), version: ItemVersion(id.v1),
                        minimalRange: ByteRange(location: 65_536, length: 65_536), aligningTo: 4096)
                    #expect(old.item.itemVersion.contentVersionString == id.v1, "\(name): the version asked for")
                    #expect(try readRange(old.url.path, old.retrievedRange) == Array(v1[65_536..<131_072]), "\(name)")
                    try? FileManager.default.removeItem(at: old.url)
                }
                // A version the bucket never held: the current one serves, and the result says so.
                let lacking = try await cache.fetchPartialContents(
                    for: ItemIdentifier(domain: "s3", "unknown.bin"), version: ItemVersion("NoSuchVersionIdAtAll"),
                    minimalRange: ByteRange(location: 0, length: 65_536), aligningTo: 4096)
                #expect(lacking.item.itemVersion.contentVersionString == ids["unknown.bin"]?.v2)
                #expect(try readRange(lacking.url.path, lacking.retrievedRange) == Array(v2[0..<65_536]))
                try? FileManager.default.removeItem(at: lacking.url)
            }
        }
    }
}
