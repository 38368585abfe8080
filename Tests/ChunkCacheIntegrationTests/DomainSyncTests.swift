import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// `domain sync` (CONTRACT §11): an origin's listing applied as changes, all or nothing (F12).
@Suite(.serialized) struct DomainSyncTests {
    @Test(
        "§11 domain sync over nginx: creates, modifications and deletions become changes; local metadata stays; a listed version serves the next fetch in one GET",
        .requires(NginxServer.self))
    func nginxSync() async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root + "/docs/2024", withIntermediateDirectories: true)
            let files: [String: [UInt8]] = [
                "top.bin": TestData.random(count: 200_000, seed: 1), "docs/a.txt": TestData.text(count: 5000, seed: 2),
                "docs/2024/b.txt": TestData.text(count: 70_000, seed: 3),
            ]
            for (path, bytes) in files { try TestData.write(bytes, to: root + "/" + path) }
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            defer { Task { await server.stop() } }
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain("web", origin: try Origin(server.baseURL))
            let first = try await cache.syncDomain("web")
            #expect(first.created == 5 && first.modified == 0 && first.deleted == 0, "3 files and 2 folders: \(first)")
            let all = try await cache.enumeratorOfAllItems(in: "web")
            var replica = try await Replica(all)
            let byID = snapshots(replica.items.values)
            #expect(byID["docs/2024/b.txt"]?.parent == "docs/2024" && byID["docs/2024/b.txt"]?.size == 70_000)
            #expect(
                try await listAll(try await cache.enumerator(for: Item.rootContainer, in: "web")).items.map(\.filename)
                    == ["docs", "top.bin"])
            // The listed version is nginx's ETag: the fetch pins it and gets 206 at once.
            try await server.clearAccessLog()
            let fetched = try await cache.fetchPartialContents(
                for: ItemIdentifier(domain: "web", "top.bin"), version: nil,
                minimalRange: ByteRange(location: 0, length: 100), aligningTo: 4096)
            #expect(
                try readRange(fetched.url.path, fetched.retrievedRange)
                    == Array(files["top.bin"]![0..<Int(fetched.retrievedRange.length)]))
            unlink(fetched.url.path)
            let log = try await server.accessLog(atLeast: 1)
            #expect(
                log.count == 1 && log.first?.status == 206
                    && log.first?.ifMatch == byID["top.bin"].map { String(decoding: $0.contentVersion, as: UTF8.self) },
                "one GET pinned to the listed version: \(log)")
            // Nothing changed: nothing applied, no new domain version.
            try await cache.flushUsage()
            let before = try cache.domainVersion(of: "web")
            let quiet = try await cache.syncDomain("web")
            #expect(
                quiet.created + quiet.modified + quiet.deleted == 0 && quiet.unchanged == 3
                    && quiet.domainVersion == before)
            #expect(try cache.domainVersion(of: "web") == before)
            _ = try await cache.setMetadata(
                MetadataEdit(favoriteRank: .set(9)), of: ItemIdentifier(domain: "web", "docs/a.txt"))
            // At the origin: one file rewritten (a new size), one removed with its folder, one added.
            try TestData.write(TestData.text(count: 6000, seed: 4), to: root + "/docs/a.txt")
            try FileManager.default.removeItem(atPath: root + "/docs/2024")
            try TestData.write([1, 2, 3], to: root + "/new.txt")
            let second = try await cache.syncDomain("web")
            #expect(second.created == 1 && second.modified == 1 && second.deleted == 2, "\(second)")
            try await replica.catchUp(all)
            let after = snapshots(try await listAll(all).items)
            #expect(replica.items.mapValues(ItemSnapshot.init) == after, "the changes carry the sync")
            #expect(
                after["docs/a.txt"]?.favorite == 9 && after["docs/a.txt"]?.size == 6000,
                "a new version keeps the favorite")
            #expect(after["docs/2024"] == nil && after["docs/2024/b.txt"] == nil && after["new.txt"]?.size == 3)
            let versions = try await cache.versions(of: ItemIdentifier(domain: "web", "docs/a.txt")).versions
            #expect(versions.count == 2, "a changed version is a new version record")
        }
    }

    @Test(
        "§11 domain sync of a tree whose folder holds index.html: with the Origins article's nginx settings (`index` naming no real file) every folder lists; with nginx's stock `index index.html` the sync applies nothing and its error names the setting to change",
        .requires(NginxServer.self))
    func folderWithIndexHTML() async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(
                atPath: root + "/admin/templates", withIntermediateDirectories: true)
            let files: [String: [UInt8]] = [
                "top.bin": TestData.random(count: 3000, seed: 6), "admin/index.html": Array("<html>admin</html>".utf8),
                "admin/templates/index.html": Array("<html>{% block %}</html>".utf8),
                "admin/templates/base.html": Array("<html>base</html>".utf8),
            ]
            for (path, bytes) in files { try TestData.write(bytes, to: root + "/" + path) }
            let cache = try await makeCache(dir)
            let documented = try await NginxServer.start(root: URL(fileURLWithPath: root))
            defer { Task { await documented.stop() } }
            _ = try await cache.addDomain("web", origin: try Origin(documented.baseURL))
            let synced = try await cache.syncDomain("web")
            #expect(synced.created == 6, "4 files and 2 folders: \(synced)")
            let items = try await listAll(try await cache.enumeratorOfAllItems(in: "web")).items
            #expect(
                Set(items.map(\.identifier))
                    == [
                        "top.bin", "admin", "admin/index.html", "admin/templates", "admin/templates/index.html",
                        "admin/templates/base.html",
                    ])

            let stock = try await NginxServer.start(root: URL(fileURLWithPath: root), servingIndexFiles: true)
            defer { Task { await stock.stop() } }
            _ = try await cache.addDomain("stock", origin: try Origin(stock.baseURL))
            let version = try cache.domainVersion(of: "stock")
            do {
                _ = try await cache.syncDomain("stock")
                Issue.record("a sync read index.html as a listing")
            } catch let error as CacheError {
                #expect(error.code == .invalidArgument, "\(error)")
                for setting in ["index.html", "index \(NginxServer.noIndexFile);", "autoindex_format json;", "admin/"] {
                    #expect(error.message.contains(setting), "names \(setting): \(error.message)")
                }
            }
            #expect(try cache.domainVersion(of: "stock") == version, "nothing applied")
            #expect(try await listAll(try await cache.enumeratorOfAllItems(in: "stock")).items.isEmpty)
        }
    }

    @Test("F12: a sync that fails (origin stopped) applies nothing and moves no anchor", .requires(NginxServer.self))
    func failedSyncAppliesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try TestData.write([1], to: root + "/a")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain("web", origin: try Origin(server.baseURL))
            _ = try await cache.syncDomain("web")
            let all = try await cache.enumeratorOfAllItems(in: "web")
            let anchor = try await all.currentSyncAnchor()
            let version = try cache.domainVersion(of: "web")
            await server.stop()
            do {
                _ = try await cache.syncDomain("web")
                Issue.record("a sync from a stopped origin succeeded")
            } catch {
                #expect((error as? CacheError)?.code == .serverUnreachable, "\(error)")
            }
            #expect(try cache.domainVersion(of: "web") == version)
            let batch = try await all.enumerateChanges(from: anchor)
            #expect(batch.nextAnchor == anchor && batch.updated.isEmpty && batch.deleted.isEmpty, "F12")
            #expect(try await listAll(all).items.map(\.identifier) == ["a"], "nothing removed")
            #expect(await errorCode { _ = try await cache.syncDomain("nope") } == .noSuchItem)
            _ = try await cache.addDomain("local")
            #expect(await errorCode { _ = try await cache.syncDomain("local") } == .invalidArgument, "no origin")
        }
    }
}

/// In the S3 suite: the AWS_* variables are process-wide, and its tests set and clear them one at a time.
extension ColdPathS3Tests {
    @Test(
        "§11 domain sync over S3 (moto): ListObjectsV2 pages past 1,000 keys; a deleted object is a deletion",
        .requires(MotoServer.self))
    func s3Sync() async throws {
        try await withTemporaryDirectory { dir in
            let server = try await MotoServer.start(requireSignatures: true)
            setenv("AWS_ACCESS_KEY_ID", server.credentials.accessKeyID, 1)
            setenv("AWS_SECRET_ACCESS_KEY", server.credentials.secretAccessKey, 1)
            defer {
                unsetenv("AWS_ACCESS_KEY_ID")
                unsetenv("AWS_SECRET_ACCESS_KEY")
                Task { await server.stop() }
            }
            try await server.createBucket("bucket", versioned: false)
            try TestData.write(TestData.random(count: 1000, seed: 5), to: dir + "/object")
            // The whole bucket: moto (5.2) checks a signature against the query as werkzeug decodes it, so a
            // prefix with "/" (signed as %2F, as AWS requires) would fail there but not at AWS.
            try await server.putObjects(
                bucket: "bucket", prefix: "part", count: 1_100, file: URL(fileURLWithPath: dir + "/object"))
            _ = try await server.putObject(
                bucket: "bucket", key: "sub/x.bin", file: URL(fileURLWithPath: dir + "/object"))
            let cache = try await makeCache(dir)
            _ = try await cache.addDomain(
                "s3", origin: try Origin("s3://bucket/", endpoint: server.endpoint, region: server.region))
            let first = try await cache.syncDomain("s3")
            #expect(first.created == 1_102, "1,101 objects and one folder: \(first)")
            let all = try await cache.enumeratorOfAllItems(in: "s3")
            let anchor = try await all.currentSyncAnchor()
            let item = try await cache.fetchContents(for: ItemIdentifier(domain: "s3", "sub/x.bin"))
            #expect(try TestData.read(item.url.path, count: 2000) == TestData.random(count: 1000, seed: 5))
            unlink(item.url.path)
            try await server.deleteObject(bucket: "bucket", key: "part7.bin")
            let second = try await cache.syncDomain("s3")
            #expect(second.deleted == 1 && second.created == 0 && second.modified == 0 && second.unchanged == 1_100)
            let batch = try await all.enumerateChanges(from: anchor, suggestedBatchSize: 10)
            #expect(batch.deleted == ["part7.bin"], "\(batch.deleted) \(batch.updated.map(\.identifier))")
        }
    }
}
