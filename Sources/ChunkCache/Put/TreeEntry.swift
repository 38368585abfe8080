import FileIO
import Foundation

/// One entry of a directory tree, by its path relative to the root.
struct TreeEntry: Sendable {
    var relativePath: String
    var kind: ItemKind
    var symlinkTarget = ""
    /// The modification time `lstat` listed.
    var modificationDate: Double = 0
    /// A regular file's size when listed.
    var size: Int64 = 0
    /// A regular file's identity when listed: the file read later must still be this one.
    var identity: FileIdentity?

    var parent: String {
        guard let slash = relativePath.lastIndex(of: "/") else { return Item.rootContainer }
        return String(relativePath[..<slash])
    }

    var filename: String { String(relativePath.split(separator: "/").last ?? Substring(relativePath)) }

    /// Lists `root`'s tree depth first without following symlinks, folders before their contents.
    ///
    /// Each folder is opened with `O_NOFOLLOW` and checked to be the folder `lstat` listed, so a folder
    /// swapped for a symlink during the walk cannot lead it outside the tree. A folder or file that is part
    /// of the store is refused before anything is read.
    static func walk(_ root: String, rootIdentity: FileIdentity, refusing store: StoreFootprint) throws -> [TreeEntry] {
        var entries: [TreeEntry] = []
        var pending: [(relative: String, identity: FileIdentity)] = [("", rootIdentity)]
        while let (relative, identity) = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            for (name, status) in try listFolder(directory, identity: identity) {
                let child = relative.isEmpty ? name : relative + "/" + name
                let childIdentity = FileIdentity(status)
                let modified = modificationTime(of: status)
                try store.refuse(childIdentity, at: root + "/" + child, importing: root)
                switch status.st_mode & S_IFMT {
                case S_IFDIR:
                    entries.append(TreeEntry(relativePath: child, kind: .folder, modificationDate: modified))
                    pending.append((child, childIdentity))
                case S_IFREG:
                    entries.append(
                        TreeEntry(
                            relativePath: child, kind: .file, modificationDate: modified, size: Int64(status.st_size),
                            identity: childIdentity))
                case S_IFLNK:
                    // Recorded as a link; never followed, so nothing outside the tree is read.
                    let target: String
                    do {
                        target = try FileSystem.symlinkTarget(root + "/" + child)
                    } catch {
                        throw CacheError.file(error, path: root + "/" + child, doing: "reading the symlink to import")
                    }
                    entries.append(
                        TreeEntry(
                            relativePath: child, kind: .symlink, symlinkTarget: target, modificationDate: modified))
                default:
                    continue  // sockets, FIFOs and devices have no contents to cache
                }
            }
        }
        return entries
    }

    /// The names in `directory` with their `lstat`, once `directory` is checked to be the folder listed as
    /// `identity`. The folder is opened with `O_NOFOLLOW`, checked with `fstat`, and listed through that
    /// descriptor, so the names are the checked folder's even if its path is swapped meanwhile.
    private static func listFolder(_ directory: String, identity: FileIdentity) throws -> [(String, stat)] {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
            if error.rawValue == ELOOP || error == .notDirectory {
                throw CacheError(
                    .invalidArgument,
                    "\(directory) was replaced by a symlink or a file while it was listed; nothing was imported: import again when nothing changes it",
                    underlying: error)
            }
            throw CacheError.file(error, path: directory, doing: "listing the folder to import")
        }
        return try file.closeAfter {
            guard let status = try? file.status(), FileIdentity(status) == identity else {
                throw CacheError(
                    .invalidArgument,
                    "\(directory) was replaced by another folder while it was listed; nothing was imported: import again when nothing changes it"
                )
            }
            var names: [String] = []
            do {
                try file.forEachEntry { names.append($0.name) }
            } catch {
                throw CacheError.file(
                    error as? Errno ?? Errno(rawValue: EIO), path: directory, doing: "listing the folder to import")
            }
            var children: [(String, stat)] = []
            for name in names {
                let path = directory + "/" + name
                do throws(Errno) {
                    children.append((name, try FileSystem.status(path, symlinks: .doNotFollow)))
                } catch {
                    throw CacheError.file(error, path: path, doing: "reading the tree to import")
                }
            }
            return children
        }
    }
}
