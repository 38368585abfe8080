import Foundation
import TestSupport
import Testing

@testable import ChunkCache
@testable import LMDBKit

/// One `Store` (one writer queue, one codec pool) per environment per process, whatever the number of caches.
@Suite struct StoreSharingTests {
    @Test("two ChunkCache values on one path share one Store; a different chunk size is invalidArgument")
    func cachesOnOnePathShareOneStore() async throws {
        try await withTemporaryDirectory { dir in
            var first: ChunkCache? = try await makeCache(dir)
            var second: ChunkCache? = try await ChunkCache.open(at: dir + "/store/")  // another spelling of the path
            let store = try #require(first?.store)
            #expect(second?.store === store)
            #expect(second?.store.writer === store.writer)
            #expect(second?.store.codecs === store.codecs)
            #expect(await errorCode { _ = try await makeCache(dir, chunkSize: 1 << 20) } == .invalidArgument)
            // Holders are caches: once both are gone, an open makes a new store even while the old object lives.
            first = nil
            second = nil
            #expect(first == nil && second == nil)
            #expect(try await ChunkCache.open(at: dir + "/store").store !== store)
            let other = try await ChunkCache.open(at: dir + "/other")
            #expect(other.store !== store)
        }
    }

    @Test("--max-size changes only while nobody else in the process holds the store; then it is applied")
    func resizingWaitsForTheOnlyHolder() async throws {
        try await withTemporaryDirectory { dir in
            var first: ChunkCache? = try await makeCache(dir, maxSize: 1 << 30)
            let path = try #require(first).path
            let error = try await #require(throws: CacheError.self) {
                try await ChunkCache.open(at: path, chunkSize: nil, maxSize: 1 << 31)
            }
            #expect(error.code == .transient)
            #expect(error.message.contains(path), "\(error.message)")
            #expect(first?.maxSize == 1 << 30)
            first = nil
            #expect(first == nil)
            let resized = try await ChunkCache.open(at: path, chunkSize: nil, maxSize: 1 << 31)
            #expect(resized.maxSize == 1 << 31)
        }
    }

    @Test("opens and releases from many tasks never make a second environment for one path, and leak no reader")
    func openAndReleaseStress() async throws {
        try await withTemporaryDirectory { dir in
            let path = try await makeCache(dir).path
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        for round in 0..<40 {
                            let cache = try await ChunkCache.open(at: path)
                            if round % 4 == task % 4 { _ = try await cache.statistics() }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(Environment.census.count(path).peak == 1)
            let cache = try await ChunkCache.open(at: path)
            #expect(cache.store.environment.activeReaders == 0)
        }
    }
}
