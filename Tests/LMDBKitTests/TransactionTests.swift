import LMDBKit
import TestSupport
import Testing

/// Stores every key with a value naming it.
private func fill(_ env: Environment, _ db: Database, keys: [String]) throws {
    try env.write { txn throws in
        for key in keys { try txn.put(db, key: bytes(key), value: bytes("value of \(key)")) }
    }
}

@Suite struct WriteTransactionTests {
    @Test func putThenGetReturnsTheValueAndPutAgainReplacesIt() throws {
        try withDatabase { env, db throws in
            try env.write { txn in try txn.put(db, key: bytes("key"), value: bytes("first")) }
            #expect(try env.read { try $0.value(db, "key") } == bytes("first"))
            try env.write { txn in try txn.put(db, key: bytes("key"), value: bytes("second, longer")) }
            try env.read { txn throws in
                #expect(try txn.value(db, "key") == bytes("second, longer"))
                #expect(try txn.count(db) == 1)
                #expect(try txn.value(db, "other") == nil)
            }
        }
    }

    @Test func anEmptyValueIsStoredAndIsNotAbsent() throws {
        try withDatabase { env, db throws in
            try env.write { txn in try txn.put(db, key: bytes("empty"), value: []) }
            #expect(try env.read { try $0.value(db, "empty") } == [])
        }
    }

    @Test func deleteRemovesThePairAndReportsWhetherThereWasOne() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: ["a", "b"])
            let deleted = try env.write { txn throws in
                (try txn.delete(db, key: bytes("a")), try txn.delete(db, key: bytes("missing")))
            }
            #expect(deleted == (true, false))
            try env.read { txn throws in
                #expect(try txn.value(db, "a") == nil)
                #expect(try txn.value(db, "b") == bytes("value of b"))
                #expect(try txn.count(db) == 1)
            }
        }
    }

    @Test(arguments: [1, 100, 4096, 100_000])
    func reserveLetsTheBodyWriteTheValueInPlace(count: Int) throws {
        let expected = TestData.random(count: count, seed: UInt64(count))
        try withDatabase { env, db throws in
            let returned = try env.write { txn throws in
                try bytes("reserved").withUnsafeBytes { key in
                    try txn.reserve(db, key: key, count: count) { space in
                        #expect(space.count == count)
                        space.copyBytes(from: expected)
                        return space.count
                    }
                }
            }
            #expect(returned == count)
            #expect(try env.read { try $0.value(db, "reserved") } == expected)
        }
    }

    @Test func aReserveWhoseFillThrowsAbortsTheWrite() throws {
        struct Failed: Error {}
        try withDatabase { env, db throws in
            #expect(throws: Failed.self) {
                try env.write { txn throws in
                    try bytes("reserved").withUnsafeBytes { key in
                        try txn.reserve(db, key: key, count: 16) { _ in throw Failed() }
                    }
                }
            }
            #expect(try env.read { try $0.count(db) } == 0)
        }
    }

    @Test func aZeroLengthKeyIsRejected() throws {
        try withDatabase { env, db throws in
            #expect(throws: LMDBError.self) {
                try env.write { txn in try txn.put(db, key: [], value: bytes("v")) }
            }
        }
    }
}

@Suite struct ReadTransactionTests {
    static let keys = ["b/2", "a/1", "b/10", "c/1", "b/1", "b/3", "ba", "b/"]

    @Test(
        "a value is lent to a closure (lifetimes in types): withValue returns what the closure makes of it, nil without calling it when absent; contains"
    )
    func withValueLendsTheValueToItsClosure() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: ["a"])
            try env.read { txn throws in
                #expect(try txn.withValue(db, key: bytes("a")) { String(decoding: $0, as: UTF8.self) } == "value of a")
                var called = false
                #expect(try txn.withValue(db, key: bytes("missing")) { _ in called = true } == nil)
                #expect(!called)
                #expect(try txn.contains(db, key: bytes("a")))
                #expect(try !txn.contains(db, key: bytes("missing")))
            }
        }
    }

    @Test func scanVisitsOnlyThePrefixInKeyOrder() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: Self.keys.shuffled())
            try env.read { txn throws in
                #expect(try txn.keys(db, prefix: "b/") == ["b/", "b/1", "b/10", "b/2", "b/3"])
                #expect(try txn.keys(db, prefix: "a/") == ["a/1"])
                #expect(try txn.keys(db, prefix: "d/") == [])
                #expect(try txn.keys(db, prefix: "") == Self.keys.sorted())
            }
        }
    }

    @Test func scanHandsOutEachKeysOwnValue() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: Self.keys)
            var pairs: [String: String] = [:]
            try env.read { txn throws in
                try txn.scan(db, prefix: bytes("b/")) { key, value in
                    pairs[String(decoding: key, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
                    return true
                }
            }
            #expect(pairs.count == 5)
            #expect(pairs.allSatisfy { key, value in value == "value of \(key)" })
        }
    }

    @Test func scanStopsAsSoonAsTheBodyReturnsFalse() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: Self.keys)
            var visited: [String] = []
            try env.read { txn throws in
                try txn.scan(db, prefix: bytes("b/")) { key, _ in
                    visited.append(String(decoding: key, as: UTF8.self))
                    return visited.count < 2
                }
            }
            #expect(visited == ["b/", "b/1"])
        }
    }

    @Test func scanFromAKeyStartsThereOrAtTheNextOne() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: Self.keys)
            try env.read { txn throws in
                #expect(try txn.keys(db, prefix: "b/", from: "b/10") == ["b/10", "b/2", "b/3"])
                #expect(try txn.keys(db, prefix: "b/", from: "b/11") == ["b/2", "b/3"])
                #expect(try txn.keys(db, prefix: "b/", from: "b/4") == [])
                #expect(try txn.keys(db, prefix: "b/", from: "c") == [])
                // A start before the prefix still scans the whole prefix.
                #expect(try txn.keys(db, prefix: "b/", from: "a") == ["b/", "b/1", "b/10", "b/2", "b/3"])
                #expect(try txn.keys(db, prefix: "", from: "c") == ["c/1"])
            }
        }
    }

    @Test func scanInAWriteTransactionSeesItsOwnUncommittedPuts() throws {
        try withDatabase { env, db throws in
            try fill(env, db, keys: ["k/1", "k/3"])
            let seen = try env.write { txn throws in
                try txn.put(db, key: bytes("k/2"), value: bytes("new"))
                try txn.delete(db, key: bytes("k/3"))
                return try txn.keys(db, prefix: "k/")
            }
            #expect(seen == ["k/1", "k/2"])
        }
    }

    @Test func scanPassesOnTheBodysError() throws {
        struct Stop: Error, Equatable {}
        try withDatabase { env, db throws in
            try fill(env, db, keys: Self.keys)
            #expect(throws: Stop()) {
                try env.read { txn in try txn.scan(db, prefix: []) { _, _ in throw Stop() } }
            }
        }
    }

    @Test func aReadSnapshotDoesNotSeeLaterCommits() throws {
        try withDatabase { env, db throws in
            try env.write { txn in try txn.put(db, key: bytes("k"), value: bytes("old")) }
            let (inside, keys) = try env.read { txn throws in
                try env.write { writer in
                    try writer.put(db, key: bytes("k"), value: bytes("new"))
                    try writer.put(db, key: bytes("k2"), value: bytes("added"))
                }
                return (try txn.value(db, "k"), try txn.keys(db, prefix: "k"))
            }
            #expect(inside == bytes("old"))
            #expect(keys == ["k"])
            #expect(try env.read { try $0.value(db, "k") } == bytes("new"))
        }
    }
}

@Suite struct LMDBErrorTests {
    @Test func constantsMatchTheirCodesAndPatternsMatchOnlyThemselves() {
        #expect(LMDBError.mapFull.rawValue == -30792)
        #expect(LMDBError.notFound.rawValue == -30798)
        #expect(LMDBError.mapFull ~= LMDBError(rawValue: -30792) as any Error)
        #expect(!(LMDBError.mapFull ~= LMDBError.notFound as any Error))
        struct Other: Error {}
        #expect(!(LMDBError.mapFull ~= Other() as any Error))
    }

    @Test func descriptionIsLMDBsOwnText() {
        #expect(LMDBError.mapFull.description.hasPrefix("MDB_MAP_FULL"))
        #expect(LMDBError.mapFull.description.hasSuffix("(-30792)"))
        #expect(LMDBError.noSuchFile.description.contains("No such file or directory"))
    }

    @Test func classificationSeparatesCorruptionFromSpace() {
        for error in [LMDBError.corrupted, .invalid, .versionMismatch, .panic] {
            #expect(error.isCorruption && !error.isOutOfSpace, "\(error)")
        }
        for error in [LMDBError.mapFull, .noSpace, .transactionFull] {
            #expect(error.isOutOfSpace && !error.isCorruption, "\(error)")
        }
        #expect(!LMDBError.notFound.isCorruption && !LMDBError.notFound.isOutOfSpace)
    }
}
