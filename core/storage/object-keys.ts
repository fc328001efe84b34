// Where a file's bytes live. The first segment decides access: 'public/...' is served to anyone who
// has the URL (the file id makes it unguessable); anything else needs a signed URL.
export function objectKey(f: { isPrivate: boolean; accountId: string; fileId: string; fileName: string }): string {
  return `${f.isPrivate ? 'private' : 'public'}/${f.accountId}/${f.fileId}/${f.fileName}`;
}
