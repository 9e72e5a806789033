// Disk: a rollout must not be able to fill the Docker host's disk. `limits.diskMb` is enforced on
// the writable layer where the storage driver can (else acquire is refused in words), or with a
// read-only root filesystem and size-limited tmpfs volumes; the main process's log, which any
// process in the container can write through /proc/1/fd/1, is off.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SandboxV1 } from '@shears/core';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDockerSandboxProvider,
  type DockerSandbox,
  type DockerSandboxProvider,
  supportsWritableLayerLimit,
  tmpfsTargets,
} from '../index.js';
import { describeDocker } from './test-docker-env.js';

const execFileAsync = promisify(execFile);

describe('disk limit helpers', () => {
  it('knows which storage drivers limit the writable layer', () => {
    expect(supportsWritableLayerLimit({ driver: 'overlay2', backingFilesystem: 'xfs' })).toBe(true);
    expect(supportsWritableLayerLimit({ driver: 'overlay2', backingFilesystem: 'extfs' })).toBe(false);
    expect(supportsWritableLayerLimit({ driver: 'btrfs', backingFilesystem: 'btrfs' })).toBe(true);
    expect(supportsWritableLayerLimit({ driver: 'zfs', backingFilesystem: undefined })).toBe(true);
    expect(supportsWritableLayerLimit({ driver: 'vfs', backingFilesystem: 'extfs' })).toBe(false);
    expect(supportsWritableLayerLimit({ driver: 'fuse-overlayfs', backingFilesystem: undefined })).toBe(
      false,
    );
  });

  it('puts the workdir and the scratch folder on tmpfs, once each', () => {
    expect(tmpfsTargets('/workspace', '/tmp/shears')).toEqual(['/workspace', '/tmp']);
    expect(tmpfsTargets('/workspace', '/workspace/.shears')).toEqual(['/workspace']);
    expect(tmpfsTargets('/tmp/work', '/tmp/shears')).toEqual(['/tmp']);
    expect(tmpfsTargets('/workspace', '/scratch')).toEqual(['/workspace', '/scratch']);
  });
});

describeDocker(describe, 'docker sandbox disk limits', (docker) => {
  const docker_ = new Dockerode({ socketPath: docker.host.replace(/^unix:\/\//, '') });
  let image: string;
  let storage: { driver: string; backingFilesystem: string | undefined };
  const providers: DockerSandboxProvider[] = [];

  const provider = (settings: Parameters<typeof createDockerSandboxProvider>[0]) => {
    const created = createDockerSandboxProvider({ hosts: [docker.host], image, ...settings });
    providers.push(created);
    return created;
  };
  const inspect = async (sandbox: SandboxV1) =>
    (await (sandbox as DockerSandbox).container.inspect({
      size: true,
    } as Dockerode.ContainerInspectOptions)) as Dockerode.ContainerInspectInfo & {
      SizeRw?: number;
    };

  beforeAll(async () => {
    // The test image with content in its workdir, so the tmpfs mode's copy of it is visible.
    const { stdout: id } = await execFileAsync('docker', [
      '-H',
      docker.host,
      'create',
      docker.image,
      '/bin/sh',
    ]);
    const container = id.trim();
    const seed = join(mkdtempSync(join(tmpdir(), 'shears-disk-')), 'from-image.txt');
    writeFileSync(seed, 'made in the image\n');
    try {
      await execFileAsync('docker', [
        '-H',
        docker.host,
        'cp',
        seed,
        `${container}:/workspace/from-image.txt`,
      ]);
      image = 'shears-test-disk:latest';
      await execFileAsync('docker', ['-H', docker.host, 'commit', container, image]);
    } finally {
      await execFileAsync('docker', ['-H', docker.host, 'rm', '-f', container]);
    }
    const info = await docker_.info();
    const backing = (info.DriverStatus as [string, string][] | undefined)?.find(
      ([key]) => key === 'Backing Filesystem',
    );
    storage = { driver: info.Driver, backingFilesystem: backing?.[1] };
  });
  afterAll(async () => {
    await Promise.all(providers.map((each) => each.close()));
    await docker_
      .getImage('shears-test-disk:latest')
      .remove({ force: true })
      .catch(() => undefined);
  });

  it('keeps no log of the main process on the host (writes to /proc/1/fd/1 land nowhere)', async () => {
    const sandbox = await provider({}).acquire();
    try {
      const wrote = await sandbox.exec('head -c 1048576 /dev/zero > /proc/1/fd/1; echo "rc=$?"');
      expect(wrote.stdout).toContain('rc=0');
      const details = await inspect(sandbox);
      expect(details.HostConfig.LogConfig?.Type).toBe('none');
      expect(details.LogPath).toBe('');
    } finally {
      await sandbox.dispose();
    }
  });

  it('limits the writable layer where the driver can, and otherwise refuses in words', async () => {
    const limited = provider({ limits: { diskMb: 16 } });
    if (!supportsWritableLayerLimit(storage)) {
      const where = storage.backingFilesystem
        ? `${storage.driver} on ${storage.backingFilesystem}`
        : storage.driver;
      await expect(limited.acquire()).rejects.toThrow(
        new RegExp(
          `limits\\.diskMb \\(16 MB\\) cannot be enforced .*storage driver is ${where}.*diskLimitMode: 'tmpfs'`,
        ),
      );
      return;
    }
    const sandbox = await limited.acquire();
    try {
      const fill = await sandbox.exec('dd if=/dev/zero of=/big bs=1M count=64 2>&1; echo "rc=$?"', {
        timeoutMs: 60_000,
      });
      expect(fill.stdout).toMatch(/No space left on device|Disk quota exceeded/);
      expect(fill.stdout).toMatch(/rc=[1-9]/);
    } finally {
      await sandbox.dispose();
    }
  });

  it('tmpfs mode: the image workdir is there, writes past diskMb get ENOSPC, the rest is read-only, the host takes nothing', async () => {
    const before = (await docker_.listVolumes()).Volumes?.length ?? 0;
    const sandbox = await provider({ limits: { diskMb: 8 }, diskLimitMode: 'tmpfs' }).acquire();
    try {
      // The image's content at workdir was copied onto the tmpfs, and the file API sees it.
      const fromImage = new TextDecoder().decode(await sandbox.readFile('from-image.txt'));
      expect(fromImage).toBe('made in the image\n');
      await sandbox.writeFile('written.txt', 'through the archive API');
      expect((await sandbox.exec('cat written.txt')).stdout).toBe('through the archive API');

      const workdir = await sandbox.exec(
        'dd if=/dev/zero of=big bs=1M count=32 2>&1; echo "rc=$?"; du -k big',
        {
          timeoutMs: 60_000,
        },
      );
      expect(workdir.stdout).toContain('No space left on device');
      expect(workdir.stdout).toMatch(/rc=[1-9]/);
      const kilobytes = Number(workdir.stdout.trim().split('\n').at(-1)?.split(/\s+/)[0]);
      expect(kilobytes).toBeLessThanOrEqual(8 * 1024);

      const scratch = await sandbox.exec('dd if=/dev/zero of=/tmp/big bs=1M count=32 2>&1; echo "rc=$?"', {
        timeoutMs: 60_000,
      });
      expect(scratch.stdout).toContain('No space left on device');
      // Everywhere else, and the host files Docker bind-mounts (/etc/hosts), is read-only.
      for (const path of ['/big', '/root/big', '/etc/hosts']) {
        const write = await sandbox.exec(`echo x >> ${path}; echo "rc=$?"`);
        expect(write.stdout, path).toMatch(/rc=[1-9]/);
        expect(write.stderr, path).toContain('Read-only file system');
      }
      // Persisted tool results still have their scratch folder.
      expect((await sandbox.exec(`touch ${sandbox.tempDir}/ok && echo ok`)).stdout).toBe('ok\n');
      const details = await inspect(sandbox);
      expect(details.SizeRw ?? 0).toBeLessThan(64 * 1024);
    } finally {
      await sandbox.dispose();
    }
    // The tmpfs volumes go with the container.
    expect((await docker_.listVolumes()).Volumes?.length ?? 0).toBe(before);
  });

  it('refuses a disk limit with a writable bind (a host folder outside the limit); a read-only bind is fine', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'shears-disk-bind-'));
    await expect(
      provider({ limits: { diskMb: 8 }, diskLimitMode: 'tmpfs', binds: [`${folder}:/mnt/host`] }).acquire(),
    ).rejects.toThrow(/binds ".*:\/mnt\/host" would be written on the host's disk outside any limit/);
    const sandbox = await provider({
      limits: { diskMb: 8 },
      diskLimitMode: 'tmpfs',
      binds: [`${folder}:/mnt/host:ro`],
    }).acquire();
    try {
      const write = await sandbox.exec('echo x > /mnt/host/f; echo "rc=$?"');
      expect(write.stderr).toContain('Read-only file system');
    } finally {
      await sandbox.dispose();
    }
  });

  it('refuses a disk limit for an image that declares volumes (they would sit on the host disk)', async () => {
    const { stdout } = await execFileAsync('docker', ['-H', docker.host, 'create', docker.image, '/bin/sh']);
    const container = stdout.trim();
    const withVolume = 'shears-test-disk-volume:latest';
    try {
      await execFileAsync('docker', [
        '-H',
        docker.host,
        'commit',
        '--change',
        'VOLUME /data',
        container,
        withVolume,
      ]);
    } finally {
      await execFileAsync('docker', ['-H', docker.host, 'rm', '-f', container]);
    }
    try {
      await expect(
        provider({ limits: { diskMb: 8 }, diskLimitMode: 'tmpfs' }).acquire({ image: withVolume }),
      ).rejects.toThrow(/declares volumes \(\/data\)/);
    } finally {
      await docker_
        .getImage(withVolume)
        .remove({ force: true })
        .catch(() => undefined);
    }
  });
});
