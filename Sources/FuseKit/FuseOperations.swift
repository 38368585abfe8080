import CFuse3

#if canImport(Glibc)
import Glibc
#endif

extension FuseSession {
    /// libfuse's table of C callbacks: each finds the ``FuseFilesystem`` through the request's user data and
    /// calls its method. Every operation that would change the file system answers `EROFS`.
    static func operations() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, conn in
            guard let userdata, let conn else { return }
            var connection = FuseConnection(
                maxReadahead: conn.pointee.max_readahead, maxBackground: conn.pointee.max_background,
                wanted: conn.pointee.want, capable: conn.pointee.capable)
            Unmanaged<FuseSession.Target>.fromOpaque(userdata).takeUnretainedValue().filesystem.configure(&connection)
            conn.pointee.max_readahead = connection.maxReadahead
            conn.pointee.max_background = connection.maxBackground
            conn.pointee.congestion_threshold = connection.maxBackground * 3 / 4
            conn.pointee.want = connection.wanted & conn.pointee.capable
        }
        ops.lookup = { req, parent, name in
            filesystem(req).lookup(FuseRequest(req!), parent: UInt64(parent), name: String(cString: name!))
        }
        ops.forget = { req, node, lookups in
            filesystem(req).forget(UInt64(node), lookups: lookups)
            fuse_reply_none(req)
        }
        ops.forget_multi = { req, count, forgets in
            let target = filesystem(req)
            for index in 0..<count {
                let forget = forgets![index]
                target.forget(UInt64(forget.ino), lookups: forget.nlookup)
            }
            fuse_reply_none(req)
        }
        ops.getattr = { req, node, _ in filesystem(req).attributes(FuseRequest(req!), node: UInt64(node)) }
        ops.readlink = { req, node in filesystem(req).readLink(FuseRequest(req!), node: UInt64(node)) }
        ops.open = { req, node, info in
            filesystem(req).open(FuseRequest(req!), node: UInt64(node), flags: info!.pointee.flags)
        }
        ops.read = { req, node, size, offset, info in
            filesystem(req).read(
                FuseRequest(req!), node: UInt64(node), handle: info!.pointee.fh, offset: Int64(offset), size: size)
        }
        ops.release = { req, node, info in
            filesystem(req).release(FuseRequest(req!), node: UInt64(node), handle: info!.pointee.fh)
        }
        ops.opendir = { req, node, _ in filesystem(req).openDirectory(FuseRequest(req!), node: UInt64(node)) }
        ops.readdirplus = { req, node, size, offset, info in
            filesystem(req).readDirectory(
                FuseRequest(req!), node: UInt64(node), handle: info!.pointee.fh, offset: Int64(offset), size: size)
        }
        ops.releasedir = { req, node, info in
            filesystem(req).releaseDirectory(FuseRequest(req!), node: UInt64(node), handle: info!.pointee.fh)
        }
        ops.statfs = { req, node in filesystem(req).filesystemStatus(FuseRequest(req!), node: UInt64(node)) }
        ops.getxattr = { req, node, name, size in
            filesystem(req).extendedAttribute(
                FuseRequest(req!), node: UInt64(node), name: String(cString: name!), size: size)
        }
        ops.listxattr = { req, node, size in
            filesystem(req).extendedAttributeNames(FuseRequest(req!), node: UInt64(node), size: size)
        }
        ops.setxattr = { req, node, name, value, size, _ in
            filesystem(req).setExtendedAttribute(
                FuseRequest(req!), node: UInt64(node), name: String(cString: name!),
                value: UnsafeRawBufferPointer(start: value, count: size))
        }
        ops.lseek = { req, node, offset, whence, info in
            filesystem(req).seek(
                FuseRequest(req!), node: UInt64(node), handle: info!.pointee.fh, offset: Int64(offset),
                whence: whence)
        }
        // A read-only file system: whatever would change it is refused as on a read-only mount.
        ops.setattr = { req, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.mknod = { req, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.mkdir = { req, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.unlink = { req, _, _ in fuse_reply_err(req, EROFS) }
        ops.rmdir = { req, _, _ in fuse_reply_err(req, EROFS) }
        ops.symlink = { req, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.rename = { req, _, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.link = { req, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.write = { req, _, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.create = { req, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.removexattr = { req, _, _ in fuse_reply_err(req, EROFS) }
        ops.fallocate = { req, _, _, _, _, _ in fuse_reply_err(req, EROFS) }
        ops.copy_file_range = { req, _, _, _, _, _, _, _, _ in fuse_reply_err(req, EROFS) }
        return ops
    }
}

/// The file system a request is for (a free function: C callbacks cannot capture a type's context).
private func filesystem(_ req: fuse_req_t?) -> any FuseFilesystem {
    Unmanaged<FuseSession.Target>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue().filesystem
}
