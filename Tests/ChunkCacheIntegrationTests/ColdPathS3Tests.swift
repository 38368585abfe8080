import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path from an S3 origin: moto's server on 127.0.0.1, a versioned bucket (CONTRACT §10).
@Suite(.serialized) struct ColdPathS3Tests {
    @Test(
        "§10 S3: items are discovered in one signed ranged GET; the VersionId is the content version; older versions stay fetchable",
        .requires(MotoServer.self))
    func versionedBucket() async throws {
        try await withTemporaryDirectory { dir in
            let server = try await MotoServer.start(requireSignatures: true)
            do {
                setenv("AWS_ACCESS_KEY_ID", server.credentials.accessKeyID, 1)
                setenv("AWS_SECRET_ACCESS_KEY", server.credentials.secretAccessKey, 1)
                defer {
                    unsetenv("AWS_ACCESS_KEY_ID")
                    unsetenv("AWS_SECRET_ACCESS_KEY")
                }
                try await server.createBucket("media", versioned: true)
                #expect(try await server.statusOfForgedRequest(bucket: "media") == 403, "moto checks signatures")
                let old = TestData.random(count: 3 << 20, seed: 31)
                let new = TestData.random(count: 3 << 20, seed: 32)
                try TestData.write(old, to: dir + "/old")
                try TestData.write(new, to: dir + "/new")
                let oldID = try #require(
                    try await server.putObject(
                        bucket: "media", key: "films/a.bin", file: URL(fileURLWithPath: dir + "/old")))
                let cache = try await makeCache(dir)
                _ = try await cache.addDomain(
                    "s3", origin: try Origin("s3://media/films/", endpoint: server.endpoint, region: server.region))
                let item = ItemIdentifier(domain: "s3", "a.bin")
                let first = try await cache.fetchPartialContents(
                    for: item, version: nil, minimalRange: ByteRange(location: 70_000, length: 10), aligningTo: 4096)
                #expect(first.item.itemVersion.contentVersionString == oldID)
                #expect(first.item.documentSize == 3 << 20 && first.originRequests == 1)
                #expect(try readRange(first.url.path, first.retrievedRange) == Array(old[65_536..<131_072]))
                let newID = try #require(
                    try await server.putObject(
                        bucket: "media", key: "films/a.bin", file: URL(fileURLWithPath: dir + "/new")))
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
                let otherID = try #require(
                    try await server.putObject(
                        bucket: "media", key: "films/b.bin", file: URL(fileURLWithPath: dir + "/old")))
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
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }
}
