// What every view shares: `call` (the tenant's API), the tenant, and the user whose data is looked at.
import { createContext } from "preact";
import { useContext } from "preact/hooks";

export const Session = createContext(null);

export function useSession() {
  return useContext(Session);
}
