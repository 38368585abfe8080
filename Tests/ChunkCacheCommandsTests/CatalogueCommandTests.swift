import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ls`, `changes`, `anchor`, `mark`, `rm` and `mv` through the CLI (CONTRACT §11), each run a new process.
@Suite("§11 catalogue commands")
struct CatalogueCommandTests {
    static let itemKeys: Set<String> = [
        "domain", "id", "contentVersion", "metadataVersion", "size", "parent", "filename", "contentType",
        "creationDate",
        "contentModificationDate", "lastUsedDate", "tagData", "favoriteRank", "isShared", "isTrashed",
    ]

    /// Imports a tree of `count` files in `docs/` and one in the root.
    static func makeDomain(_ dir: String, files count: Int) throws -> String {
        let store = dir + "/store"
        let tree = dir + "/tree"
        try FileManager.default.createDirectory(atPath: tree + "/docs", withIntermediateDirectories: true)
        for index in 0..<count {
            try TestData.write(Array("file \(index)".utf8), to: tree + "/docs/" + String(format: "%03d.txt", index))
        }
        try TestData.write(Array("top".utf8), to: tree + "/top.txt")
        try runJSON(store, ["import", tree, "--domain", "d"])
        return store
    }

    @Test("§11 ls pages a folder with --page-size and --page; every item object has the §11 keys, absent values null")
    func lsPages() throws {
        try withTemporaryDirectory { dir in
            let store = try Self.makeDomain(dir, files: 25)
            var names: [String] = []
            var page: String?
            var anchors: Set<String> = []
            repeat {
                let result = try runJSON(
                    store, ["ls", "--domain", "d", "docs", "--page-size", "10"] + (page.map { ["--page", $0] } ?? []))
                let items = try result.array("items").compactMap { $0 as? [String: Any] }
                #expect(items.count <= 10, "F8")
                for item in items {
                    #expect(Set(item.keys).isSuperset(of: Self.itemKeys), "keys: \(item.keys.sorted())")
                    #expect(item["parent"] as? String == "docs" && item["contentType"] as? String == "file")
                    #expect(
                        item["lastUsedDate"] is NSNull && item["tagData"] is NSNull && item["favoriteRank"] is NSNull)
                    #expect(item["isTrashed"] as? Bool == false)
                    names.append(item["filename"] as? String ?? "")
                }
                anchors.insert(try result.string("syncAnchor"))
                page = result["nextPage"] as? String
                if let page { #expect(page.utf8.count <= 500, "F1") }
            } while page != nil
            #expect(names == (0..<25).map { String(format: "%03d.txt", $0) })
            #expect(anchors.count == 1, "every page of one listing carries its first page's anchor")
            let root = try runJSON(store, ["ls", "--domain", "d"])
            #expect(
                try root.array("items").compactMap { ($0 as? [String: Any])?["filename"] as? String } == [
                    "docs", "top.txt",
                ])
            let byDate = try runJSON(store, ["ls", "--domain", "d", "docs", "--sort", "date"])
            #expect(try byDate.array("items").count == 25)
            expectError(
                try runCLI(["--store", store, "--json", "ls", "--domain", "d", "docs", "--page", "bm9wZQ"]), exit: 1,
                code: "pageExpired")
            expectError(
                try runCLI(["--store", store, "--json", "ls", "--domain", "d", "nope"]), exit: 1, code: "noSuchItem",
                mentions: ["nope"])
            expectError(
                try runCLI(["--store", store, "--json", "ls", "--domain", "d", "--page-size", "0"]), exit: 64,
                code: "invalidArgument")
        }
    }

    @Test(
        "F4: changes in batches of 3, each by a new process, give distinct anchors and every change once; then the same anchor and moreComing false"
    )
    func changesAcrossProcesses() throws {
        try withTemporaryDirectory { dir in
            let store = try Self.makeDomain(dir, files: 10)
            let start = try runJSON(store, ["anchor", "--domain", "d"])
            var anchor = try start.string("syncAnchor")
            #expect(try start.string("domainVersion") == "1")
            for index in 0..<10 {
                let marked = try runJSON(
                    store, ["mark", "--domain", "d", String(format: "docs/%03d.txt", index), "--favorite", "\(index)"])
                #expect(try marked.string("domainVersion") == "\(index + 2)")
            }
            var seen: [String] = []
            var anchors = [anchor]
            var more = true
            while more {
                let batch = try runJSON(store, ["changes", "--domain", "d", "--since", anchor, "--batch", "3"])
                let updated = try batch.array("updated").compactMap { ($0 as? [String: Any])?["id"] as? String }
                #expect(updated.count <= 3, "F8")
                seen += updated
                anchor = try batch.string("nextAnchor")
                anchors.append(anchor)
                more = batch["moreComing"] as? Bool ?? false
            }
            #expect(Set(anchors).count == anchors.count, "F4: distinct anchors \(anchors)")
            #expect(Set(seen) == Set((0..<10).map { String(format: "docs/%03d.txt", $0) }) && seen.count == 10)
            let quiet = try runJSON(store, ["changes", "--domain", "d", "--since", anchor])
            #expect(try quiet.string("nextAnchor") == anchor && quiet["moreComing"] as? Bool == false, "F3")
            #expect(try quiet.string("domainVersion") == "11", "a batch carries the version it was read at")
            #expect(try runJSON(store, ["ls", "--domain", "d"]).string("domainVersion") == "11", "so does a page")
            expectError(
                try runCLI(["--store", store, "--json", "changes", "--domain", "d", "--since", "AAAA"]), exit: 1,
                code: "syncAnchorExpired")
        }
    }

    @Test("E2: changes --wait returns once another process makes a change, and --timeout gives up with the same anchor")
    func waitForChange() throws {
        try withTemporaryDirectory { dir in
            let store = try Self.makeDomain(dir, files: 1)
            let anchor = try runJSON(store, ["anchor", "--domain", "d"]).string("syncAnchor")
            let began = Date()
            let idle = try runJSON(store, ["changes", "--domain", "d", "--since", anchor, "--wait", "--timeout", "1s"])
            #expect(Date().timeIntervalSince(began) >= 1)
            #expect(try idle.string("nextAnchor") == anchor)
            let waiter = try CLIProcess([
                "--store", store, "--json", "changes", "--domain", "d", "--since", anchor, "--wait", "--timeout", "30s",
            ])
            usleep(300_000)
            try runJSON(store, ["mark", "--domain", "d", "top.txt", "--shared"])
            let result = waiter.wait(timeout: 30)
            #expect(result.exitCode == 0, "\(result)")
            let updated = try result.json().array("updated").compactMap { ($0 as? [String: Any])?["id"] as? String }
            #expect(updated == ["top.txt"])
        }
    }

    @Test(
        "§11 mark, rm and mv print the item and the new domain version; trash and the working set list what they should"
    )
    func edits() throws {
        try withTemporaryDirectory { dir in
            let store = try Self.makeDomain(dir, files: 2)
            let marked = try runJSON(
                store, ["mark", "--domain", "d", "top.txt", "--favorite", "5", "--tag", "0aff", "--shared", "--used"])
            let item = try marked.object("item")
            #expect(
                item["favoriteRank"] as? Int == 5 && item["tagData"] as? String == "0aff"
                    && item["isShared"] as? Bool == true)
            #expect(item["lastUsedDate"] is String)
            let working = try runJSON(store, ["ls", "--domain", "d", "workingSet"])
            #expect(try working.array("items").compactMap { ($0 as? [String: Any])?["id"] as? String } == ["top.txt"])
            let trashed = try runJSON(store, ["rm", "--domain", "d", "docs"])
            #expect(try trashed.object("item")["parent"] as? String == "NSFileProviderTrashContainerItemIdentifier")
            #expect(try trashed.object("item")["isTrashed"] as? Bool == true)
            let trash = try runJSON(store, ["ls", "--domain", "d", "trash"])
            #expect(try trash.array("items").compactMap { ($0 as? [String: Any])?["id"] as? String } == ["docs"])
            let moved = try runJSON(store, ["mv", "--domain", "d", "top.txt", "--to", "docs", "--name", "moved.txt"])
            #expect(
                try moved.object("item")["parent"] as? String == "docs"
                    && (try moved.object("item")["filename"] as? String) == "moved.txt")
            #expect(try moved.domainVersion() == (try trashed.domainVersion()) + 1)
            let gone = try runJSON(store, ["rm", "--domain", "d", "docs", "--permanently"])
            #expect(
                Set(try gone.array("deleted").compactMap { $0 as? String }) == [
                    "docs", "docs/000.txt", "docs/001.txt", "top.txt",
                ])
            expectError(
                try runCLI(["--store", store, "--json", "rm", "--domain", "d", "docs"]), exit: 1, code: "noSuchItem",
                mentions: ["docs"])
            expectError(
                try runCLI(["--store", store, "--json", "mark", "--domain", "d", "x", "--tag", "zz"]), exit: 64,
                code: "invalidArgument")
            expectError(
                try runCLI(["--store", store, "--json", "mv", "--domain", "d", "root", "--to", "root"]), exit: 1,
                code: "invalidArgument")
        }
    }
}
