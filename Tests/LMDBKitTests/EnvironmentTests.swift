import Foundation
import TestSupport
import Testing

@testable import LMDBKit

@Suite struct EnvironmentTests {
    @Test func namedDatabasesKeepTheirPairsApart() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment.open(directory: dir, maxDatabases: 4, mapSize: 1 << 20)
            let chunks = try env.openDatabase("chunks")
            let manifests = try env.openDatabase("manifests")
            #expect(chunks != manifests)
            try env.write { txn throws in
                try txn.put(chunks, key: bytes("k"), value: bytes("chunk"))
                try txn.put(manifests, key: bytes("k"), value: bytes("manifest"))
            }
            try env.read { txn throws in
                #expect(try txn.value(chunks, "k") == bytes("chunk"))
                #expect(try txn.value(manifests, "k") == bytes("manifest"))
                #expect(try txn.count(chunks) == 1)
            }
        }
    }

    @Test func openingOneDatabaseTooManyThrowsDatabasesFull() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            _ = try env.openDatabase("one")
            _ = try env.openDatabase("two")
            #expect(throws: LMDBError.databasesFull) { try env.openDatabase("three") }
        }
    }

    @Test func openingAMissingDatabaseWithoutCreateThrowsNotFound() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            #expect(throws: LMDBError.notFound) { try env.openDatabase("absent", create: false) }
        }
    }

    @Test func theRegistryHandsOutOneEnvironmentPerDirectory() throws {
        try withTemporaryDirectory { dir in
            let first = try Environment.open(directory: dir + "/a", maxDatabases: 2, mapSize: 1 << 20, creating: true)
            let again = try Environment.open(directory: dir + "/a", maxDatabases: 2, mapSize: nil)
            let other = try Environment.open(directory: dir + "/b", maxDatabases: 2, mapSize: 1 << 20, creating: true)
            #expect(first.handle == again.handle)
            #expect(first.handle != other.handle)
            #expect(again.directory == dir + "/a")
        }
    }

    @Test func committedPairsSurviveClosingAndReopening() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
                let db = try env.openDatabase("main")
                try env.write { txn in try txn.put(db, key: bytes("kept"), value: bytes("value")) }
            }  // The last reference goes: `deinit` closes the environment.
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: nil)
            let db = try env.openDatabase("main", create: false)
            #expect(try env.read { try $0.value(db, "kept") } == bytes("value"))
            #expect(env.mapSize == 1 << 20)
        }
    }

    @Test func aWriteWhoseBodyThrowsLeavesNothingBehind() throws {
        struct Abandon: Error {}
        try withDatabase(mapSize: 1 << 20) { env, db in
            try env.write { txn in try txn.put(db, key: bytes("old"), value: bytes("1")) }
            #expect(throws: Abandon.self) {
                try env.write { txn throws in
                    try txn.put(db, key: bytes("new"), value: bytes("2"))
                    try txn.put(db, key: bytes("old"), value: bytes("changed"))
                    #expect(try txn.value(db, "new") == bytes("2"))  // visible inside the transaction only
                    throw Abandon()
                }
            }
            try env.read { txn throws in
                #expect(try txn.value(db, "new") == nil)
                #expect(try txn.value(db, "old") == bytes("1"))
                #expect(try txn.count(db) == 1)
            }
        }
    }

    /// Counts what transactions left for after their commits, and what the committed data held when it ran.
    final class Tally: AfterCommit {
        var pieces = 0
        var runs: [[UInt8]?] = []
        let db: Database
        init(_ db: Database) { self.db = db }
        func run(_ environment: Environment) {
            runs.append(try? environment.write { txn in try txn.value(db, "key") })
        }
    }

    @Test func workLeftForAfterTheCommitRunsOnceAfterItAndNeverAfterAnAbort() throws {
        struct Abandon: Error {}
        try withDatabase(mapSize: 1 << 20) { env, db in
            let kept = try env.write { txn in
                let first = txn.afterCommit { Tally(db) }
                first.pieces += 1
                try txn.put(db, key: bytes("key"), value: bytes("committed"))
                let again = txn.afterCommit { Tally(db) }
                again.pieces += 1
                #expect(first === again, "one object per kind of work and transaction")
                #expect(first.runs.isEmpty, "nothing runs before the commit")
                return first
            }
            #expect(kept.pieces == 2 && kept.runs == [bytes("committed")], "ran once, after the commit, free to write")

            let dropped = Tally(db)
            #expect(throws: Abandon.self) {
                try env.write { txn throws in
                    _ = txn.afterCommit { dropped }
                    try txn.put(db, key: bytes("key"), value: bytes("abandoned"))
                    throw Abandon()
                }
            }
            #expect(dropped.runs.isEmpty, "an aborted transaction's work never runs")
        }
    }

    @Test func aTinyMapFillsUpWithMapFullAndKeepsWhatWasCommitted() throws {
        try withDatabase(mapSize: 256 << 10) { env, db in
            let committed = TestData.random(count: 8 << 10, seed: 1)
            try env.write { txn in try txn.put(db, key: bytes("committed"), value: committed) }

            let large = TestData.random(count: 32 << 10, seed: 2)
            var putsBeforeFull = 0
            var caughtMapFull = false
            do {
                try env.write { txn throws in
                    for index in 0..<64 {  // 64 × 32 KiB = 2 MiB, eight times the map
                        try txn.put(db, key: bytes("large-\(index)"), value: large)
                        putsBeforeFull += 1
                    }
                }
                Issue.record("64 values of 32 KiB fitted in a 256 KiB map")
            } catch LMDBError.mapFull {
                caughtMapFull = true
            }
            #expect(caughtMapFull)
            #expect(putsBeforeFull > 0 && putsBeforeFull < 8)

            try env.read { txn throws in
                #expect(try txn.value(db, "committed") == committed)
                #expect(try txn.value(db, "large-0") == nil)
                #expect(try txn.count(db) == 1)
            }
            // The environment is still usable after the aborted transaction.
            try env.write { txn in try txn.put(db, key: bytes("after"), value: bytes("ok")) }
            #expect(try env.read { try $0.value(db, "after") } == bytes("ok"))
        }
    }

    @Test func aGarbageDataFileIsReportedAsCorruptionNotACrash() throws {
        try withTemporaryDirectory { dir in
            try TestData.write(TestData.random(count: 64 << 10, seed: 3), to: dir + "/data.mdb")
            let error = try #require(throws: LMDBError.self) {
                try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            }
            #expect(error.isCorruption, "\(error)")
            #expect(!error.isOutOfSpace)
            // A failed open leaves nothing in the registry: fixing the file makes the next open work.
            try FileManager.default.removeItem(atPath: dir + "/data.mdb")
            let env = try Environment.open(directory: dir, maxDatabases: 2, mapSize: 1 << 20)
            #expect(env.activeReaders == 0)
        }
    }

    @Test func aMissingDirectoryThrowsNoSuchFile() throws {
        try withTemporaryDirectory { dir in
            #expect(throws: LMDBError.noSuchFile) {
                try Environment.open(directory: dir + "/missing", maxDatabases: 2, mapSize: 1 << 20)
            }
        }
    }

    @Test func readTransactionsGiveTheirReaderSlotBack() throws {
        struct Stop: Error {}
        try withDatabase(mapSize: 1 << 20) { env, db in
            try env.write { txn in try txn.put(db, key: bytes("k"), value: bytes("v")) }
            let before = env.activeReaders
            #expect(before == 0)

            #expect(try env.read { _ in env.activeReaders } == before + 1)
            #expect(try env.read { _ in try env.read { _ in env.activeReaders } } == before + 2)
            for _ in 0..<100 { _ = try env.read { try $0.value(db, "k") } }
            #expect(throws: Stop.self) { try env.read { _ in throw Stop() } }
            #expect(throws: Stop.self) {
                try env.read { txn in try txn.scan(db, prefix: []) { _, _ in throw Stop() } }
            }
            #expect(env.activeReaders == before)
        }
    }

    @Test func usedBytesGrowWithTheData() throws {
        try withDatabase(mapSize: 4 << 20) { env, db in
            let empty = env.usedBytes
            try env.write { txn throws in
                try txn.put(db, key: bytes("big"), value: TestData.random(count: 1 << 20, seed: 4))
            }
            #expect(env.usedBytes >= empty + (1 << 20))
            #expect(env.usedBytes <= env.mapSize)
        }
    }

    @Test func growingTheMapLetsABiggerWriteThrough() throws {
        try withDatabase(mapSize: 256 << 10) { env, db in
            let value = TestData.random(count: 512 << 10, seed: 5)
            #expect(throws: LMDBError.mapFull) {
                try env.write { txn in try txn.put(db, key: bytes("v"), value: value) }
            }
            try env.setMapSize(4 << 20)
            #expect(env.mapSize == 4 << 20)
            try env.write { txn in try txn.put(db, key: bytes("v"), value: value) }
            #expect(try env.read { try $0.value(db, "v") } == value)
        }
    }
}

extension Environment {
    /// Opens the environment in `directory`, making the directory first when `creating`.
    static func open(directory: String, maxDatabases: Int, mapSize: Int?, creating: Bool) throws -> Environment {
        if creating { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        return try open(directory: directory, maxDatabases: maxDatabases, mapSize: mapSize)
    }
}
