FROM --platform=linux/x86_64 exec.env.x86_64.437918b9cd24690e5e9c56:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
